#!/usr/bin/env node
/** The `azure-storage-concurrency` command (package.json `bin`). */
import { redactSecrets } from "../errors.js";
import { runCli } from "./run.js";

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // runCli turns every failure of a command into one line and an exit code; this is the last
    // resort for a failure of that reporting itself (say, stderr closed), so it never goes unseen.
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`azure-storage-concurrency: ${redactSecrets(message)}\n`);
    process.exitCode = 1;
  },
);
