/**
 * A process calling an idempotent() function for the queue tests: goes through ASC_KEYS keys
 * (`key-0` … in an order of its own) on a TableIdempotencyStore on ASC_INBOX, several such
 * processes at once, and reports on stdout as JSON lines: `running` (fn started for a key),
 * `result` (what the call returned), `error`, `finished`.
 *
 * fn works for a random 0..40 ms, then commits one effect row `effect-<uuid>` (with the key and
 * its pid) with the done record, and returns { pid, token }: an effect committed twice would show
 * up as two rows, and a caller given another call's result would show a token that is not stored.
 */
import { randomUUID } from "node:crypto";
import type { TransactionAction } from "@azure/data-tables";
import { idempotent, TableIdempotencyStore } from "../../../../src/idempotency/index.js";
import { tableClient } from "../../../support/storage.js";

const print = (line: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...line })}\n`);

const inbox = tableClient(process.env.ASC_INBOX!);
const count = Number(process.env.ASC_KEYS ?? "100");

const charge = idempotent<string, { pid: number; token: string }, TransactionAction>(
  async (key, { partitionKey, addEffects, abortSignal }) => {
    print({ event: "running", key });
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 40)));
    abortSignal.throwIfAborted();
    addEffects(["create", { partitionKey, rowKey: `effect-${randomUUID()}`, Key: key, Pid: process.pid }]);
    return { pid: process.pid, token: randomUUID() };
  },
  {
    store: new TableIdempotencyStore(inbox),
    key: (key) => key,
    whenInProgress: "wait",
    claimDurationInMs: 2_000,
    // Several processes and Azurite share two cores: answers can take over a second.
    requestTimeoutInMs: 1_500,
  },
);

const keys = Array.from({ length: count }, (_, i) => `key-${i}`).sort(() => Math.random() - 0.5);
print({ event: "ready" });
for (const key of keys) {
  try {
    print({ event: "result", key, result: await charge(key) });
  } catch (error) {
    print({ event: "error", key, error: String(error) });
  }
}
print({ event: "finished" });
