/**
 * `idempotent()`'s claim under a store that stops answering (issue 21, defect 2; repro r15), on
 * Azurite through the fault proxy: the call's claim is given up by its local expiry guard before
 * it can expire, `fn`'s signal is aborted with an `IdempotencyClaimLostError` (`expiry-guard`)
 * before another call can take the key over, and a done mark is never sent once the guard has
 * passed, even when `fn` ignores its signal and the store answers again.
 */
import {
  idempotent,
  isIdempotencyClaimLostError,
  TableIdempotencyStore,
  type IdempotencyClaimLostError,
} from "../../../src/idempotency/index.js";
import type { FaultProxy } from "../../../src/testing/index.js";
import { faultProxyFor, tableClient } from "../../support/storage.js";
import { newInbox } from "./consumer-support.js";

/** Short, so that a claim expires within the test; its guard gives it up 375 ms before that. */
const CLAIM_DURATION_IN_MS = 1_500;

let proxy: FaultProxy;
let viaProxy: string;

beforeAll(async () => {
  ({ proxy, connectionString: viaProxy } = await faultProxyFor("table"));
});
afterEach(() => {
  proxy.clearRules();
  proxy.clearLog();
});
afterAll(() => proxy.close());

const settled = (promise: Promise<unknown>) =>
  promise.then(
    (value: unknown) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

it("a claim whose extensions hang is given up before it expires: fn is aborted before another call runs it", async () => {
  const inbox = await newInbox("idemguard");
  const timeline: string[] = [];
  let bRan!: () => void;
  const bHasRun = new Promise<void>((resolve) => (bRan = resolve));
  let reason: unknown;
  // A's store requests go through the proxy, and get no answer from the moment fn starts.
  const callA = idempotent(
    async (_id: string, { abortSignal }) => {
      proxy.addRule({ action: { type: "hang" } });
      // fn honours its signal: it waits for its work (here: until B has run, which is what the
      // defect allowed), and checks its signal before the external effect.
      await Promise.race([bHasRun, new Promise((resolve) => abortSignal.addEventListener("abort", resolve))]);
      if (abortSignal.aborted) {
        reason = abortSignal.reason;
        timeline.push("A aborted");
        throw abortSignal.reason;
      }
      timeline.push("A charged");
      return "A";
    },
    {
      store: new TableIdempotencyStore(tableClient(inbox.tableName, viaProxy)),
      key: (id) => id,
      claimDurationInMs: CLAIM_DURATION_IN_MS,
    },
  );
  const callB = idempotent(
    async () => {
      timeline.push("B charged");
      bRan();
      return "B";
    },
    { store: new TableIdempotencyStore(inbox), key: (id: string) => id, whenInProgress: "wait" },
  );
  const a = settled(callA("order-1"));
  await new Promise((resolve) => setTimeout(resolve, 200)); // A holds the claim
  const b = await callB("order-1");
  const outcomeA = await a;

  expect(b).toBe("B");
  expect(timeline).toEqual(["A aborted", "B charged"]);
  expect(isIdempotencyClaimLostError(reason)).toBe(true);
  expect(reason).toMatchObject({ code: "IdempotencyClaimLost", reason: "expiry-guard", key: "order-1" });
  expect(outcomeA.ok).toBe(false);
  expect(isIdempotencyClaimLostError(!outcomeA.ok && outcomeA.error)).toBe(true);
  const row = await inbox.getEntity<Record<string, unknown>>("order-1", "inbox:order-1");
  expect(row).toMatchObject({ Status: "done", Result: JSON.stringify("B") });
});

it("no done mark is sent once the guard has passed, even if fn ignores its signal and the store answers again", async () => {
  const inbox = await newInbox("idemguard");
  const call = idempotent(
    async (_id: string, { abortSignal }) => {
      // Extensions (Merge of the claim's row) get no answer; fn ignores its signal.
      const stopHanging = proxy.addRule({ method: ["PATCH", "MERGE"], action: { type: "hang" } });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise((resolve) => abortSignal.addEventListener("abort", resolve)),
        new Promise((resolve) => (timer = setTimeout(resolve, 2 * CLAIM_DURATION_IN_MS))), // long past the claim
      ]);
      clearTimeout(timer);
      stopHanging();
      proxy.clearLog();
      return "ignored the signal";
    },
    {
      store: new TableIdempotencyStore(tableClient(inbox.tableName, viaProxy)),
      key: (id) => id,
      claimDurationInMs: CLAIM_DURATION_IN_MS,
    },
  );
  const outcome = await settled(call("order-2"));

  expect(outcome.ok).toBe(false);
  const error = !outcome.ok ? (outcome.error as IdempotencyClaimLostError) : undefined;
  expect(isIdempotencyClaimLostError(error)).toBe(true);
  expect(error).toMatchObject({ reason: "expiry-guard" });
  expect(proxy.requests.filter((r) => r.method !== "GET")).toEqual([]); // nothing written after the guard
  const row = await inbox.getEntity<Record<string, unknown>>("order-2", "inbox:order-2");
  expect(row.Status).toBe("claimed"); // never marked done: a later call runs fn again once the claim expires
});
