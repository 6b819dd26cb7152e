/** The project's `tsconfig.json`, parsed: its compiler options and the files it includes. */
import { join } from "node:path";
import ts from "typescript";

export function readProjectConfig(root: string): ts.ParsedCommandLine {
  const configPath = join(root, "tsconfig.json");
  const config = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  return ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath);
}
