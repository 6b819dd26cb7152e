/**
 * A batch handler's answer becomes one outcome per message; anything malformed fails every message
 * of the batch with a TypeError that says what to return.
 */
import { outcomesOf } from "../../../src/queue/batch.js";

describe("batch handler outcomes", () => {
  it("nothing means every message was processed", () => {
    expect(outcomesOf(undefined, 2)).toEqual([
      { ok: true, result: undefined },
      { ok: true, result: undefined },
    ]);
  });

  it("reads one outcome per message, in order", () => {
    const error = new Error("bad");
    expect(
      outcomesOf(
        [
          { status: "processed", result: 1 },
          { status: "failed", error },
        ],
        2,
      ),
    ).toEqual([
      { ok: true, result: 1 },
      { ok: false, error },
    ]);
  });

  it.each([
    ["an object", { status: "processed" }, /resolved with an object/],
    ["a number", 3, /resolved with a number/],
    ["too few outcomes", [{ status: "processed" }], /1 outcomes for 2 messages/],
    ["an unknown status", [{ status: "processed" }, { status: "ok" }], /position 1 whose status is neither/],
    ["null", [null, { status: "processed" }], /position 0/],
  ])("fails every message on %s", (_name, answer, message) => {
    const outcomes = outcomesOf(answer, 2);
    expect(outcomes).toHaveLength(2);
    for (const outcome of outcomes) {
      expect(outcome.ok).toBe(false);
      expect(String((outcome as { error: unknown }).error)).toMatch(message);
    }
  });
});
