/**
 * The engine's logic over an in-memory cell that behaves like the service (ETags, If-Match,
 * If-None-Match) and can inject the faults that matter: a response lost after the write was
 * applied, a 412 answering the SDK's retry of an applied write, 503 before applying, a reset.
 */
import { randomUUID } from "node:crypto";
import { RestError } from "@azure/core-rest-pipeline";
import {
  isOptimisticConflictError,
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  writeLastWriterWins,
  type VersionedCell,
} from "../../../src/optimistic/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { noBackoff } from "../../../src/retry/index.js";
import { forgetAllCells } from "../../../src/optimistic/process-state.js";

type Fault =
  | "lost-response"
  | "retried-412"
  | "busy"
  | "reset"
  | "someone-else-first"
  /** Applied, the response lost; a writer outside the library rewrites the value without its history; the SDK's resend gets 412. */
  | "retried-412-after-raw-rewrite";

class FakeStore {
  value: string | undefined;
  version = 0;
  log: string | undefined;
  reads = 0;
  writes = 0;
  readonly faults: Fault[] = [];
  get etag() {
    return `"${this.version}"`;
  }
  /** A write by someone outside this process. */
  external(value: string) {
    this.value = value;
    this.version++;
    this.log = undefined;
  }
}

const restError = (statusCode: number, code: string) => new RestError(code, { statusCode, code });
const resetError = () => Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });

function fakeCell(store: FakeStore): VersionedCell<string, string> {
  return {
    key: `fake|${randomUUID()}`,
    description: "fake cell",
    async read() {
      await Promise.resolve();
      store.reads++;
      return store.value === undefined ? undefined : { content: store.value, etag: store.etag, log: store.log };
    },
    async write(content, { condition, log, onSend }) {
      await Promise.resolve();
      store.writes++;
      const fault = store.faults.shift();
      // Count the sends as the library's cells do; "retried-412" is the SDK's resend of an applied write.
      onSend?.();
      if (fault === "retried-412" || fault === "retried-412-after-raw-rewrite") onSend?.();
      if (fault === "busy") throw restError(503, "ServerBusy");
      if (fault === "reset") throw resetError();
      if (fault === "someone-else-first") store.external(`${store.value ?? ""}!`);
      if ("ifMatch" in condition && (store.value === undefined || condition.ifMatch !== store.etag))
        throw restError(412, "ConditionNotMet");
      if ("ifNoneMatch" in condition && store.value !== undefined) throw restError(409, "BlobAlreadyExists");
      store.value = content;
      store.version++;
      store.log = log;
      if (fault === "lost-response") throw resetError();
      if (fault === "retried-412") throw restError(412, "ConditionNotMet");
      if (fault === "retried-412-after-raw-rewrite") {
        store.external(`${store.value}+raw`);
        throw restError(412, "ConditionNotMet");
      }
      return store.etag;
    },
    decode(content) {
      if (content.startsWith("corrupt")) throw new SyntaxError("unreadable");
      return content;
    },
    encode(value) {
      if (typeof value !== "string") throw new TypeError("not a string");
      return value;
    },
  };
}

const append = (letter: string) => (current: string | undefined) => `${current ?? ""}${letter}`;
const quick = { backoff: noBackoff() };

describe("optimisticUpdate", () => {
  it("creates an absent cell, then updates it with If-Match", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    expect(await optimisticUpdate(cell, append("a"))).toMatchObject({
      written: true,
      value: "a",
      etag: '"1"',
      attempts: 1,
      coalesced: 1,
    });
    expect(await optimisticUpdate(cell, append("b"), { skipReadAfterOwnWrite: false })).toMatchObject({
      value: "ab",
      etag: '"2"',
    });
    expect(store.value).toBe("ab");
  });

  it("coalesces concurrent updates into one write, mutations in call order, one outcome each", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    const results = await Promise.all(["a", "b", "c", "d", "e"].map((l) => optimisticUpdate(cell, append(l))));
    expect(store.value).toBe("abcde");
    expect(store.writes).toBe(1);
    expect(results.map((r) => r.value)).toEqual(["a", "ab", "abc", "abcd", "abcde"]);
    expect(results.every((r) => r.etag === '"1"' && r.coalesced === 5)).toBe(true);
  });

  it("without coalescing, concurrent updates race and retry, and none is lost", async () => {
    const store = new FakeStore();
    store.value = "";
    const cell = fakeCell(store);
    const results = await Promise.all(
      ["a", "b", "c", "d", "e"].map((l) =>
        optimisticUpdate(cell, append(l), { ...quick, coalesce: false, maxAttempts: 20 }),
      ),
    );
    expect([...store.value].sort().join("")).toBe("abcde");
    expect(store.writes).toBeGreaterThan(5);
    expect(Math.max(...results.map((r) => r.attempts))).toBeGreaterThan(1);
  });

  it("a throwing mutate rejects only its caller and writes nothing of its own", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    const boom = new Error("mutate failed");
    const outcomes = await Promise.allSettled([
      optimisticUpdate(cell, append("a")),
      optimisticUpdate(cell, (current) => {
        if (current !== undefined) throw boom;
        return "never";
      }),
      optimisticUpdate(cell, append("c")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBe(boom);
    expect(store.value).toBe("ac");
  });

  it("a mutate may skip (written: false); returning undefined is refused; nothing is written", async () => {
    const store = new FakeStore();
    store.value = "x";
    const cell = fakeCell(store);
    expect(await optimisticUpdate(cell, () => SKIP_WRITE)).toMatchObject({
      written: false,
      value: "x",
      etag: store.etag,
      coalesced: 0,
    });
    await expect(optimisticUpdate(cell, (() => undefined) as never)).rejects.toThrow(/returned undefined/);
    await expect(optimisticUpdate(cell, () => 42 as never)).rejects.toThrow(TypeError);
    expect(store.writes).toBe(0);
  });

  it("unreadable content rejects every caller of the round and writes nothing", async () => {
    const store = new FakeStore();
    store.value = "corrupt!";
    const cell = fakeCell(store);
    const outcomes = await Promise.allSettled([
      optimisticUpdate(cell, append("a")),
      optimisticUpdate(cell, append("b")),
    ]);
    expect(outcomes.every((o) => o.status === "rejected" && /unreadable/.test(String(o.reason)))).toBe(true);
    expect(store.writes).toBe(0);
  });

  it("gives up after maxAttempts conflicts with a typed error, having written nothing of its own", async () => {
    const store = new FakeStore();
    store.value = "";
    store.faults.push("someone-else-first", "someone-else-first", "someone-else-first");
    const conflicts: number[] = [];
    const error = await optimisticUpdate(fakeCell(store), append("a"), {
      ...quick,
      maxAttempts: 3,
      onConflict: (e) => conflicts.push(e.attempt),
    }).catch((e: unknown) => e);
    expect(isOptimisticConflictError(error)).toBe(true);
    expect(error).toMatchObject({ code: "OptimisticConflict", attempts: 3, statusCode: 412 });
    expect(conflicts).toEqual([1, 2]); // no wait after the last attempt
    expect(store.value).toBe("!!!");
  });

  it("a write applied whose response was lost counts once, as this writer's success", async () => {
    for (const fault of ["lost-response", "retried-412"] as const) {
      const store = new FakeStore();
      store.value = "";
      store.faults.push(fault);
      const result = await optimisticUpdate(fakeCell(store), append("a"), quick);
      expect(result).toMatchObject({ written: true, value: "a", recoveredLostResponse: true, etag: store.etag });
      expect(store.value).toBe("a");
      expect(store.writes).toBe(1);
    }
  });

  it("a lost create (If-None-Match: *) that was applied also counts once", async () => {
    const store = new FakeStore();
    store.faults.push("retried-412");
    expect(await optimisticUpdate(fakeCell(store), append("a"), quick)).toMatchObject({ recoveredLostResponse: true });
    expect(store.value).toBe("a");
  });

  it("a transient refusal that outlasts the SDK's retries rejects, and nothing was written", async () => {
    const store = new FakeStore();
    store.value = "";
    store.faults.push("busy");
    const error = await optimisticUpdate(fakeCell(store), append("a"), quick).catch((e: unknown) => e);
    expect(isStorageRequestError(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 503, transient: true });
    expect((error as Error).message).toContain("nothing was written");
    expect(store.value).toBe("");
  });

  it("a connection failure with the cell unchanged: the same write is sent again, and lands once", async () => {
    const store = new FakeStore();
    store.value = "";
    store.faults.push("reset", "reset");
    const result = await optimisticUpdate(fakeCell(store), append("a"), quick);
    expect(result).toMatchObject({ written: true, value: "a", attempts: 1, recoveredLostResponse: false });
    expect(store.value).toBe("a");
    expect(store.writes).toBe(3); // the write, and two sends of the same write (same id, same If-Match)
  });

  it("a lost response whose value a raw writer rewrote without history is unknown, never applied again", async () => {
    const store = new FakeStore();
    store.value = "";
    store.faults.push("retried-412-after-raw-rewrite");
    const error = await optimisticUpdate(fakeCell(store), append("a"), quick).catch((e: unknown) => e);
    expect(isOptimisticOutcomeUnknownError(error)).toBe(true);
    expect(store.value).toBe("a+raw"); // once, not "a+rawa"
  });

  it("skips the read when this process wrote last; a write from elsewhere costs one 412 and a read", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    await optimisticUpdate(cell, append("a"));
    const reads = store.reads;
    await optimisticUpdate(cell, append("b"));
    expect(store.reads).toBe(reads); // no read: started from the version it wrote
    store.external("ab-from-elsewhere");
    expect(await optimisticUpdate(cell, append("c"), quick)).toMatchObject({
      value: "ab-from-elsewherec",
      attempts: 2,
    });
    expect(store.reads).toBe(reads + 1);
    await optimisticUpdate(cell, append("d"), { skipReadAfterOwnWrite: false });
    expect(store.reads).toBe(reads + 2);
  });

  it("reads again once the process state is reset, as a new process would", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    await optimisticUpdate(cell, append("a"));
    const reads = store.reads;
    await optimisticUpdate(cell, append("b"));
    expect(store.reads).toBe(reads); // skipped: the cell's state holds the version written
    forgetAllCells();
    expect(await optimisticUpdate(cell, append("c"))).toMatchObject({ value: "abc", attempts: 1 });
    expect(store.reads).toBe(reads + 1); // the state was forgotten: read first
  });

  it("rejects bad arguments with TypeError/RangeError before anything is sent", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    await expect(optimisticUpdate({} as never, append("a"))).rejects.toThrow(TypeError);
    await expect(optimisticUpdate(cell, "a" as never)).rejects.toThrow(/`mutate`/);
    await expect(optimisticUpdate(cell, append("a"), { maxAttempts: 0 })).rejects.toThrow(RangeError);
    await expect(optimisticUpdate(cell, append("a"), { backoff: {} as never })).rejects.toThrow(/`backoff`/);
    await expect(optimisticUpdate(cell, append("a"), { coalesce: "yes" as never })).rejects.toThrow(/`coalesce`/);
    expect(store.reads + store.writes).toBe(0);
  });

  it("honours abortSignal: before starting, and during the wait after a conflict", async () => {
    const store = new FakeStore();
    store.value = "";
    const cell = fakeCell(store);
    await expect(
      optimisticUpdate(cell, append("a"), { abortSignal: AbortSignal.abort(new Error("stop")) }),
    ).rejects.toThrow("stop");
    store.faults.push("someone-else-first");
    const controller = new AbortController();
    const pending = optimisticUpdate(cell, append("a"), {
      backoff: { name: "long", delayInMs: () => 60_000 },
      abortSignal: controller.signal,
      onConflict: () => controller.abort(new Error("cancelled while waiting")),
    });
    await expect(pending).rejects.toThrow("cancelled while waiting");
  });
});

describe("readCell and writeLastWriterWins", () => {
  it("tells whether the caller's copy is current, and reports absent cells", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    expect(await readCell(cell)).toEqual({ exists: false, changed: true });
    store.external("v1");
    const first = await readCell(cell);
    expect(first).toEqual({ exists: true, changed: true, value: "v1", etag: store.etag });
    expect(await readCell(cell, { ifNoneMatch: store.etag })).toEqual({
      exists: true,
      changed: false,
      etag: store.etag,
    });
    store.external("v2");
    expect(await readCell(cell, { ifNoneMatch: '"0"' })).toMatchObject({ changed: true, value: "v2" });
  });

  it("last writer wins: writes over whatever is there, without an ETag check", async () => {
    const store = new FakeStore();
    const cell = fakeCell(store);
    await optimisticUpdate(cell, append("a"));
    store.external("changed elsewhere");
    expect(await writeLastWriterWins(cell, "mine")).toEqual({ etag: store.etag });
    expect(store.value).toBe("mine");
  });
});
