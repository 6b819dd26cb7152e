/**
 * Every export of a feature's entry point is something a user writes (issue 22): no document,
 * example, test or tool mentioning it means an internal leaked into the public API, or public API
 * nobody shows or checks. scripts/check-entry-point-uses.ts does the work.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { featureExports, findUnmentionedExports } from "../../../scripts/check-entry-point-uses.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("feature entry points", () => {
  it("export nothing that no doc, example, test or tool outside src/ mentions", () => {
    expect(findUnmentionedExports(root)).toEqual([]);
  });

  it("are read: every feature's entry point has exports, its option types among them", () => {
    // The check above would pass on entry points it could not read.
    const exports = featureExports(root);
    expect(exports.size).toBeGreaterThanOrEqual(12);
    for (const [source, names] of exports) expect([source, names.length > 0]).toEqual([source, true]);
    const lease = exports.get("src/lease/index.ts")!;
    expect(lease.find((e) => e.name === "blobLock")?.typeOnly).toBe(false);
    expect(lease.find((e) => e.name === "LeaseLockOptions")?.typeOnly).toBe(true);
  });
});
