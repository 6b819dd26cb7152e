/**
 * No unused exports (issue 8): every export of src/ is public API (reachable from the package's
 * entry points) or imported somewhere in the project. scripts/check-unused-exports.ts does the work.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findUnusedExports } from "../../../scripts/check-unused-exports.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("exports", () => {
  it("src/ exports nothing that is neither public API nor imported by another file", () => {
    expect(findUnusedExports(root)).toEqual([]);
  });
});
