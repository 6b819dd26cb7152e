/**
 * `idempotent(fn, { store, key })` against the Table store on Azurite and the memory store: a
 * duplicate call returns the stored result without running `fn`, the same key with another payload
 * is refused, concurrent duplicates are refused or wait, a failure releases the key, effects commit
 * with the done record, a lost claim refuses the done record, and a result too large to keep still
 * marks the key done.
 */
import type { TransactionAction } from "@azure/data-tables";
import {
  idempotent,
  isIdempotencyClaimLostError,
  isIdempotencyInProgressError,
  isIdempotencyPayloadMismatchError,
  MemoryIdempotencyStore,
  TableIdempotencyStore,
  type IdempotencyStore,
  type MemoryEffect,
} from "../../../src/idempotency/index.js";
import { newInbox as newInboxTable } from "./consumer-support.js";

const newInbox = () => newInboxTable("idem");

interface Order {
  id: string;
  amount: number;
  placedOn?: Date;
  traceId?: string;
}

const errorOf = (promise: Promise<unknown>) =>
  promise.then(
    () => new Error("resolved"),
    (error: unknown) => error,
  );

const stores: [string, () => Promise<IdempotencyStore<never>>][] = [
  ["TableIdempotencyStore", async () => new TableIdempotencyStore(await newInbox())],
  ["MemoryIdempotencyStore", async () => new MemoryIdempotencyStore()],
];

describe.each(stores)("idempotent() on the %s", (_name, create) => {
  it("runs once per key; duplicates get the stored result (through JSON) without running", async () => {
    const store = await create();
    let runs = 0;
    const charge = idempotent(
      async (order: Order) => {
        runs += 1;
        return { charged: order.amount, on: new Date("2025-01-02T03:04:05Z") };
      },
      { store, key: (order) => order.id },
    );
    const first = await charge({ id: "o-1", amount: 10 });
    const again = await charge({ id: "o-1", amount: 10 });
    expect(runs).toBe(1);
    // Typed as the JSON round trip it is (JsonRoundTrip): the Date is its ISO text, on every call.
    const on: string = again.on;
    expect(on).toBe("2025-01-02T03:04:05.000Z");
    expect(first).toEqual({ charged: 10, on: "2025-01-02T03:04:05.000Z" });
    expect(again).toEqual(first);
    await charge({ id: "o-2", amount: 20 });
    expect(runs).toBe(2);
  });

  it("refuses the same key with another payload, and ignores key order and what `payload` leaves out", async () => {
    const store = await create();
    let runs = 0;
    const charge = idempotent(
      async (order: Order) => {
        runs += 1;
        return order.amount;
      },
      { store, key: (order) => order.id, payload: ({ traceId: _ignored, ...rest }) => rest },
    );
    await charge({ id: "o-1", amount: 10, traceId: "t-1" });
    expect(await charge({ amount: 10, id: "o-1", traceId: "t-2" })).toBe(10);
    const error = await errorOf(charge({ id: "o-1", amount: 11 }));
    expect(isIdempotencyPayloadMismatchError(error)).toBe(true);
    expect(error).toMatchObject({ key: "o-1", code: "IdempotencyPayloadMismatch" });
    expect(runs).toBe(1);
  });

  it("releases the key when fn throws: the next call runs again", async () => {
    const store = await create();
    let runs = 0;
    const flaky = idempotent(
      async (id: string) => {
        runs += 1;
        if (runs === 1) throw new Error("payment provider down");
        return `ok ${id}`;
      },
      { store, key: (id) => id },
    );
    await expect(flaky("k")).rejects.toThrow("payment provider down");
    expect(await flaky("k")).toBe("ok k");
    expect(runs).toBe(2);
  });

  it("refuses a concurrent duplicate at once by default, or lets it wait for the stored result", async () => {
    const store = await create();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const work = async (id: string) => {
      runs += 1;
      await gate;
      return `done ${id}`;
    };
    const rejecting = idempotent(work, { store, key: (id) => id });
    const waiting = idempotent(work, { store, key: (id) => id, whenInProgress: "wait" });
    const first = rejecting("k");
    await new Promise((resolve) => setTimeout(resolve, 200)); // the first call holds the claim
    const refused = await errorOf(rejecting("k"));
    expect(isIdempotencyInProgressError(refused)).toBe(true);
    const waited = waiting("k");
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect(await first).toBe("done k");
    expect(await waited).toBe("done k");
    expect(runs).toBe(1);
  });

  it("gives up waiting after waitTimeoutInMs", async () => {
    const store = await create();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = idempotent(async () => gate, { store, key: () => "k" });
    const impatient = idempotent(async () => undefined, {
      store,
      key: () => "k",
      whenInProgress: "wait",
      waitTimeoutInMs: 300,
    });
    const first = slow(undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const error = await errorOf(impatient(undefined));
    expect(isIdempotencyInProgressError(error)).toBe(true);
    expect(String(error)).toMatch(/waited \d+ ms/);
    release();
    await first;
  });

  it("aborts fn with the caller's signal and releases the key", async () => {
    const store = await create();
    const controller = new AbortController();
    let seen: unknown;
    const call = idempotent(
      async (_input: string, { abortSignal }) =>
        new Promise((_, reject) =>
          abortSignal.addEventListener("abort", () => {
            seen = abortSignal.reason;
            reject(abortSignal.reason as Error);
          }),
        ),
      { store, key: (id) => id },
    );
    const pending = call("k", { abortSignal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort(new Error("client went away"));
    await expect(pending).rejects.toThrow("client went away");
    expect(String(seen)).toMatch(/client went away/);
    const again = idempotent(async () => "second", { store, key: () => "k" });
    expect(await again(undefined)).toBe("second");
  });

  it("marks a key done even when its result is too large to keep: no call runs fn again", async () => {
    const store = await create();
    let runs = 0;
    const big = idempotent(
      async () => {
        runs += 1;
        return "x".repeat(40_000);
      },
      { store, key: () => "big" },
    );
    await expect(big(undefined)).rejects.toThrow(/ran once and its effects were committed.*at most 30000/);
    await expect(big(undefined)).rejects.toThrow(RangeError);
    expect(runs).toBe(1);
  });

  it("checks its options and each call's key before any request", async () => {
    const store = await create();
    expect(() => idempotent(async () => 1, { store, key: "id" as never })).toThrow(/`key` must be a function/);
    expect(() => idempotent(async () => 1, { store, key: () => "k", whenInProgress: "block" as never })).toThrow(
      /`whenInProgress` must be "reject" or "wait"/,
    );
    expect(() => idempotent(async () => 1, { store, key: () => "k", claimDurationInMs: 500 })).toThrow(RangeError);
    expect(() =>
      idempotent(async () => 1, { store, key: () => "k", claimDurationInMs: 4_000, requestTimeoutInMs: 4_000 }),
    ).toThrow(/`requestTimeoutInMs` \(4000\) must be shorter than `claimDurationInMs`/);
    const call = idempotent(async () => 1, { store, key: (input: { id: string }) => input.id });
    await expect(call({ id: "" })).rejects.toThrow(TypeError);
    await expect(call({ id: "k", n: 1n } as never)).rejects.toThrow(/must be JSON-serialisable/);
  });
});

describe("idempotent() on the TableIdempotencyStore", () => {
  it("commits fn's effects with the done record, exactly once", async () => {
    const inbox = await newInbox();
    const store = new TableIdempotencyStore(inbox);
    const charge = idempotent<Order, string, TransactionAction>(
      async (order, { partitionKey, addEffects }) => {
        addEffects(["create", { partitionKey, rowKey: "charge", amount: order.amount }]);
        return "charged";
      },
      { store, key: (order) => order.id },
    );
    await charge({ id: "o-1", amount: 10 });
    await charge({ id: "o-1", amount: 10 });
    const rows: string[] = [];
    for await (const row of inbox.listEntities()) rows.push(`${row.partitionKey}/${row.rowKey}`);
    expect(rows.sort()).toEqual(["o-1/charge", "o-1/inbox:o-1"]);
  });
});

describe("idempotent() on the MemoryIdempotencyStore", () => {
  it("aborts fn and records nothing when another call took the key over (its claim expired meanwhile)", async () => {
    let now = Date.now();
    const store = new MemoryIdempotencyStore({ now: () => now });
    const charges: string[] = [];
    let reason: unknown;
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const stalled = idempotent<string, string, MemoryEffect>(
      async (id, { abortSignal, addEffects }) => {
        addEffects(() => charges.push(`stalled ${id}`));
        entered();
        await new Promise((resolve) => abortSignal.addEventListener("abort", resolve));
        reason = abortSignal.reason;
        return "stalled";
      },
      { store, key: (id) => id, claimDurationInMs: 1_000 },
    );
    const pending = stalled("k");
    await inside;
    now += 60_000; // the stalled call's claim has expired: another call takes the key over
    const other = idempotent<string, string, MemoryEffect>(
      async (id, { addEffects, takenOverFrom }) => {
        addEffects(() => charges.push(`other ${id}`));
        expect(takenOverFrom).toMatch(/^idempotent-/);
        return "other";
      },
      { store, key: (id) => id, claimDurationInMs: 1_000 },
    );
    expect(await other("k")).toBe("other");
    const error = await errorOf(pending);
    expect(isIdempotencyClaimLostError(error)).toBe(true);
    expect(isIdempotencyClaimLostError(reason)).toBe(true);
    expect(charges).toEqual(["other k"]);
  });
});
