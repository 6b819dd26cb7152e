/**
 * The one guard (issue 22): `isStorageConcurrencyError(error, code)` is true only for the library's
 * errors with that code, and its code map names every code the library throws, so that no error is
 * left out of the narrowing.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isStorageConcurrencyError, StorageConcurrencyError } from "../../../src/index.js";
import { LeaseLostError, LockTimeoutError } from "../../../src/lease/index.js";
import { MessageOwnershipLostError } from "../../../src/queue/index.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

describe("isStorageConcurrencyError(error, code)", () => {
  const lost = new LeaseLostError("lost", { reason: "renewal-refused" } as never);

  it("is true for the library's error with that code, and narrows to its class", () => {
    expect(isStorageConcurrencyError(lost, "LeaseLost")).toBe(true);
    if (isStorageConcurrencyError(lost, "LeaseLost")) expect(lost.reason).toBe("renewal-refused");
    expect(isStorageConcurrencyError(lost)).toBe(true);
  });

  it("is false for another code, for a look-alike without the brand, and for any thrown value", () => {
    expect(isStorageConcurrencyError(lost, "LockTimeout")).toBe(false);
    expect(isStorageConcurrencyError(new LockTimeoutError("busy", { timeoutInMs: 1 }), "LeaseLost")).toBe(false);
    expect(isStorageConcurrencyError({ name: "LeaseLostError", code: "LeaseLost" }, "LeaseLost")).toBe(false);
    for (const value of [undefined, null, 0, "LeaseLost", Symbol("x")]) {
      expect(isStorageConcurrencyError(value, "LeaseLost")).toBe(false);
    }
    const throwing = new StorageConcurrencyError("x", { code: "LeaseLost" });
    Object.defineProperty(throwing, "code", {
      get() {
        throw new Error("no");
      },
    });
    expect(isStorageConcurrencyError(throwing, "LeaseLost")).toBe(false);
  });

  it("tells a class's codes apart (one class, two codes)", () => {
    const claim = new MessageOwnershipLostError("claim", { messageId: "m", lost: "claim", operation: "complete" });
    expect(isStorageConcurrencyError(claim, "ClaimOwnershipLost")).toBe(true);
    expect(isStorageConcurrencyError(claim, "MessageOwnershipLost")).toBe(false);
  });

  it("its code map names every code the library's errors are built with", () => {
    const map = readFileSync(join(root, "src/error-codes.ts"), "utf8");
    const mapped = new Set([...map.matchAll(/^\s+(\w+): \w+;$/gm)].map((m) => m[1]));
    const thrown = new Set<string>();
    const visit = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "testing") visit(path);
        } else if (entry.name.endsWith(".ts")) {
          // Code literals in constructor calls and type unions, outside comments.
          const code = readFileSync(path, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
          for (const m of code.matchAll(/\bcode: (?:[^"\n]*\? )?"(\w+)"(?: : "(\w+)")?/g)) {
            thrown.add(m[1]!);
            if (m[2]) thrown.add(m[2]);
          }
        }
      }
    };
    visit(join(root, "src"));
    expect(thrown.size).toBeGreaterThan(20);
    expect([...thrown].filter((code) => !mapped.has(code)).sort()).toEqual([]);
  });
});
