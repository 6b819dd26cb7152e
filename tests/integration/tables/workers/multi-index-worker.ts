/**
 * A separate process that increments a multi-index record's counter with modify(), and every third
 * time changes the runner's age too, which moves the record's AGE row. Prints one JSON line when done.
 *
 * Arguments: <table> <partitionKey> <increments> <worker id>; the connection string comes from
 * ASC_TEST_CONNECTION_STRING. Prints {"ready":true}, then waits for the test to write the row
 * control/go, so that every writer starts at once.
 */
import { TableClient } from "@azure/data-tables";
import { decorrelatedJitterBackoff, type BackoffStrategy } from "../../../../src/retry/index.js";
import { runners } from "./runners.js";

const [tableName, partitionKey, incrementsText, worker] = process.argv.slice(2);
const client = TableClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!, tableName!, {
  allowInsecureConnection: true,
});
const table = runners(client);
console.log(JSON.stringify({ ready: true }));
for (;;) {
  const go = await client.getEntity("control", "go").catch(() => undefined);
  if (go) break;
  await new Promise((resolve) => setTimeout(resolve, 10));
}
let conflicts = 0;
const inner = decorrelatedJitterBackoff({ baseInMs: 5, maxInMs: 200 });
const counting: BackoffStrategy = {
  name: "counting",
  delayInMs: (retry, previous) => (conflicts++, inner.delayInMs(retry, previous)),
};
for (let i = 0; i < Number(incrementsText); i++) {
  await table.modify(
    partitionKey!,
    "BIB",
    "00007__Ann",
    (r) => ({ ...r, count: r.count + 1, age: i % 3 === 2 ? 30 + ((r.count + 1) % 4) : r.age }),
    {
      maxAttempts: 100,
      backoff: counting,
    },
  );
}
console.log(JSON.stringify({ worker, done: Number(incrementsText), conflicts }));
