/**
 * `withTimeLimit`: a limit beyond a Node.js timer's longest delay (2^31 - 1 ms, about 24.8 days) is
 * cut to that delay, never turned into the 1 ms Node.js gives an overlong timer; a short limit still
 * cuts a call off.
 */
import { withTimeLimit } from "../../../src/internal/time-limit.js";

const answerAfter = (ms: number) => () => new Promise<string>((resolve) => setTimeout(() => resolve("answered"), ms));

describe("withTimeLimit", () => {
  it("a limit longer than a timer's longest delay does not cut a call off after 1 ms", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      await expect(withTimeLimit("read a blob", 3_000_000_000, undefined, answerAfter(30))).resolves.toBe("answered");
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("TimeoutOverflowWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("a short limit cuts a call off with a time-limit error naming the operation", async () => {
    await expect(withTimeLimit("read a blob", 10, undefined, answerAfter(200))).rejects.toThrow(/read a blob/);
  });
});
