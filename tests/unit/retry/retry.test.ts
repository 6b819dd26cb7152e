import { RestError, createHttpHeaders, type PipelineRequest } from "@azure/core-rest-pipeline";
import { fixedBackoff, noBackoff, retry, retryPolicy, type RetryEvent } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";

const busy = (headers: Record<string, string> = {}) =>
  new RestError("busy", {
    code: "ServerBusy",
    statusCode: 503,
    response: { status: 503, headers: createHttpHeaders(headers), request: {} as PipelineRequest, bodyAsText: null },
  });
const conflict = () => new RestError("conflict", { code: "ConditionNotMet", statusCode: 412 });

function failing(times: number, error: () => unknown) {
  let calls = 0;
  const operation = async () => {
    calls += 1;
    if (calls <= times) throw error();
    return "done";
  };
  return { operation, calls: () => calls };
}

describe("retry", () => {
  it("retries transient failures until the operation succeeds", async () => {
    const { operation, calls } = failing(2, busy);
    const events: RetryEvent[] = [];
    await expect(retry(operation, { backoff: noBackoff(), onRetry: (e) => events.push(e) })).resolves.toBe("done");
    expect(calls()).toBe(3);
    expect(events.map((e) => e.attempt)).toEqual([1, 2]);
    expect(events[0]!.classification.kind).toBe("throttled");
  });

  it("gives up after maxRetries with a typed error that counts the attempts", async () => {
    const { operation, calls } = failing(100, busy);
    const error = await retry(operation, {
      backoff: noBackoff(),
      maxRetries: 4,
      operationName: "write blob 'x'",
    }).catch((e: unknown) => e);
    expect(calls()).toBe(5);
    expect(isStorageRequestError(error)).toBe(true);
    expect(error).toMatchObject({
      attempts: 5,
      statusCode: 503,
      serviceCode: "ServerBusy",
      transient: true,
      code: "StorageRequestFailed",
    });
    expect((error as Error).message).toMatch(/^Could not write blob 'x': 503 ServerBusy/);
  });

  it("does not retry what the classifier says is not transient", async () => {
    const { operation, calls } = failing(100, conflict);
    await expect(retry(operation, { backoff: noBackoff() })).rejects.toMatchObject({
      statusCode: 412,
      transient: false,
    });
    expect(calls()).toBe(1);
  });

  it("passes errors that are not storage errors through untouched", async () => {
    const mine = new Error("mine");
    await expect(
      retry(
        async () => {
          throw mine;
        },
        { backoff: noBackoff() },
      ),
    ).rejects.toBe(mine);
  });

  it("passes a rejection that is not an Error through untouched, without retrying it", async () => {
    for (const thrown of ["a string", 42, null, undefined, { reason: "mine" }]) {
      const { operation, calls } = failing(100, () => thrown);
      const seen = await retry(operation, { backoff: noBackoff() }).then(
        () => "resolved",
        (error: unknown) => ({ error }),
      );
      expect(seen).toEqual({ error: thrown });
      if (typeof thrown === "object" && thrown !== null) expect((seen as { error: unknown }).error).toBe(thrown);
      expect(calls()).toBe(1);
    }
  });

  it("classifies a rejection that is not an Error like any other, and retries it when told to", async () => {
    const decisions: [string, unknown][] = [];
    const { operation, calls } = failing(2, () => "not an Error");
    await expect(
      retry(operation, {
        backoff: noBackoff(),
        shouldRetry: (classification, error) => (decisions.push([classification.kind, error]), true),
      }),
    ).resolves.toBe("done");
    expect(calls()).toBe(3);
    expect(decisions).toEqual([
      ["other", "not an Error"],
      ["other", "not an Error"],
    ]);
    // An SDK-shaped object is a storage failure, Error or not: transient, so retried by default.
    const busyObject = failing(1, () => ({ name: "RestError", statusCode: 503, code: "ServerBusy" }));
    await expect(retry(busyObject.operation, { backoff: noBackoff() })).resolves.toBe("done");
    expect(busyObject.calls()).toBe(2);
  });

  it("retries a TypeError when shouldRetry says so (p-retry alone would refuse)", async () => {
    const { operation, calls } = failing(1, () => new TypeError("flaky"));
    await expect(retry(operation, { backoff: noBackoff(), shouldRetry: () => true })).resolves.toBe("done");
    expect(calls()).toBe(2);
  });

  it("gives the operation an abortSignal even when the caller passed none", async () => {
    const signals: AbortSignal[] = [];
    await retry(async ({ abortSignal }) => {
      signals.push(abortSignal);
      return "done";
    });
    expect(signals[0]).toBeInstanceOf(AbortSignal);
    expect(signals[0]!.aborted).toBe(false);
    const controller = new AbortController();
    await retry(
      async ({ abortSignal }) => {
        signals.push(abortSignal);
        return "done";
      },
      { abortSignal: controller.signal },
    );
    expect(signals[1]).toBe(controller.signal);
  });

  it("lets a custom shouldRetry decide", async () => {
    const { operation, calls } = failing(2, conflict);
    await expect(retry(operation, { backoff: noBackoff(), shouldRetry: (c) => c.statusCode === 412 })).resolves.toBe(
      "done",
    );
    expect(calls()).toBe(3);
  });

  it("waits at least as long as Retry-After asks", async () => {
    const { operation } = failing(1, () => busy({ "x-ms-retry-after-ms": "40" }));
    const events: RetryEvent[] = [];
    await retry(operation, { backoff: fixedBackoff({ delayInMs: 1 }), onRetry: (e) => events.push(e) });
    expect(events[0]!.delayInMs).toBe(40);
    const ignored: RetryEvent[] = [];
    await retry(failing(1, () => busy({ "x-ms-retry-after-ms": "40" })).operation, {
      backoff: fixedBackoff({ delayInMs: 1 }),
      honorRetryAfter: false,
      onRetry: (e) => ignored.push(e),
    });
    expect(ignored[0]!.delayInMs).toBe(1);
  });

  it("starts no retry whose wait would end past the deadline", async () => {
    const { operation, calls } = failing(100, busy);
    await expect(
      retry(operation, { backoff: fixedBackoff({ delayInMs: 10_000 }), deadlineInMs: 5_000 }),
    ).rejects.toMatchObject({ attempts: 1 });
    expect(calls()).toBe(1);
  });

  it("stops waiting at once when aborted, with the signal's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("user cancelled");
    const { operation, calls } = failing(100, busy);
    const pending = retry(operation, { backoff: fixedBackoff({ delayInMs: 60_000 }), abortSignal: controller.signal });
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    expect(calls()).toBe(1);
  });

  it("does not start when the signal is already aborted", async () => {
    const { operation, calls } = failing(0, busy);
    await expect(retry(operation, { abortSignal: AbortSignal.abort(new Error("early")) })).rejects.toThrow("early");
    expect(calls()).toBe(0);
  });

  it("rejects bad options up front, naming them", () => {
    expect(() => retryPolicy({ maxRetries: -1 })).toThrow(/`maxRetries`/);
    expect(() => retryPolicy({ maxRetries: 1.5 })).toThrow(RangeError);
    expect(() => retryPolicy({ deadlineInMs: -5 })).toThrow(/`deadlineInMs`/);
    expect(() => retryPolicy({ backoff: {} as never })).toThrow(/`backoff`/);
    expect(() => retryPolicy({ onRetry: "x" as never })).toThrow(TypeError);
  });

  it("a policy is an immutable value that can be shared", async () => {
    const policy = retryPolicy({ backoff: noBackoff(), maxRetries: 1 });
    expect(Object.isFrozen(policy)).toBe(true);
    expect(policy.options.maxRetries).toBe(1);
    await expect(policy.execute(failing(1, busy).operation)).resolves.toBe("done");
    await expect(policy.execute(failing(2, busy).operation)).rejects.toMatchObject({ attempts: 2 });
  });
});
