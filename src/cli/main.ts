#!/usr/bin/env node
/** The `azure-storage-concurrency` command (package.json `bin`). */
import { runCli } from "./run.js";

runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
