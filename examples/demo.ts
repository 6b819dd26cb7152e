/**
 * `npm run demo`: runs every example in this folder, one after another, on one embedded Azurite
 * (or on the account in AZURE_STORAGE_CONNECTION_STRING), and prints what each one shows.
 */
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { withStorage, type Example } from "./support/run-example.js";

const here = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here)
  .filter((name) => name.endsWith(".ts") && name !== "demo.ts")
  .sort();

const failures: string[] = [];
await withStorage(async (context) => {
  for (const file of files) {
    const example = (await import(pathToFileURL(join(here, file)).href)) as Partial<Example>;
    if (typeof example.main !== "function") continue;
    console.log(`\n== ${example.title ?? file} (examples/${file})`);
    try {
      await example.main(context);
    } catch (error) {
      failures.push(file);
      console.log(`  FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
});
console.log(
  `\n${files.length - failures.length} of ${files.length} examples ran${failures.length ? `; failed: ${failures.join(", ")}` : "."}`,
);
process.exitCode = failures.length ? 1 : 0;
