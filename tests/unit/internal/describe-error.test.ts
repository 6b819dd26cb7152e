/**
 * `describeError`: any thrown value as text, never a throw (issue 21). Each hostile value here made
 * `String(error)`, a template string, `error.message` or `instanceof Error` throw somewhere in the
 * library's failure paths.
 */
import { describeError, errorCodeOf, errorNameOf } from "../../../src/internal/describe-error.js";
import { classifyError } from "../../../src/retry/index.js";
import { isStorageConcurrencyError } from "../../../src/index.js";
import { readRestError } from "../../../src/error-codes.js";
import { hostileValues } from "../../support/hostile.js";

describe("describeError", () => {
  it.each(hostileValues())("%s: described, never thrown", (_, make, expected) => {
    const value = make();
    expect(() => describeError(value)).not.toThrow();
    expect(describeError(value)).toMatch(expected);
    expect(() => errorCodeOf(value)).not.toThrow();
    expect(() => errorNameOf(value)).not.toThrow();
    // The library's guards and classifier read thrown values too: none of them throws either.
    expect(() => isStorageConcurrencyError(value)).not.toThrow();
    expect(() => readRestError(value)).not.toThrow();
    expect(classifyError(value).kind).toBe("other");
  });

  it("redacts secrets, whatever carried them", () => {
    const sas = "https://a.blob.core.windows.net/c?sv=2024-05-04&sig=abcdef%2Bghi";
    expect(describeError(new Error(`failed on ${sas}`))).toContain("sig=<redacted>");
    expect(describeError(sas)).not.toContain("abcdef");
    expect(describeError({ url: sas })).not.toContain("abcdef");
    expect(describeError({ toString: () => `AccountKey=c2VjcmV0;x` })).toBe("AccountKey=<redacted>;x");
  });

  it("keeps a long description bounded", () => {
    expect(describeError("x".repeat(100_000)).length).toBeLessThanOrEqual(4_001);
  });

  it("reads code and name without trusting them", () => {
    expect(errorCodeOf(Object.assign(new Error("m"), { code: "ECONNRESET" }))).toBe("ECONNRESET");
    expect(errorCodeOf(Object.assign(new Error("m"), { code: 7 }))).toBe("Error");
    expect(errorCodeOf(Object.create(null))).toBeUndefined();
    expect(errorNameOf(new RangeError("r"))).toBe("RangeError");
    expect(errorNameOf("text")).toBeUndefined();
  });
});
