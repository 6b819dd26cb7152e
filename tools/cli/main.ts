#!/usr/bin/env node
/** The `azure-storage-concurrency` command (package.json `bin`). */
import { runCli } from "./run.js";
import { describeError } from "azure-storage-concurrency/errors";

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // runCli turns every failure of a command into one line and an exit code; this is the last
    // resort for a failure of that reporting itself (say, stderr closed), so it never goes unseen.
    process.stderr.write(`azure-storage-concurrency: ${describeError(error)}\n`);
    process.exitCode = 1;
  },
);
