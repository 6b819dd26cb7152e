/**
 * Queue messages of any size with the claim-check: a 2 MB report does not fit in a queue message
 * (64 KiB), so `ClaimCheck.sendMessage` uploads it to a blob and sends a reference; a consumer with
 * the same claim-check hands its handler the whole report, then deletes the message and the blob.
 * A small message goes as it is. A message that keeps failing goes to the poison queue with its
 * payload kept, and the poison envelope names it. Finally the sweep: payloads whose messages can no
 * longer be delivered (a send that failed after its upload) are removed, and no other.
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { QueueClient } from "@azure/storage-queue";
import { ClaimCheck } from "azure-storage-concurrency/claim-check";
import { fixedBackoff } from "azure-storage-concurrency/retry";
import { parsePoisonMessage, QueueConsumer, jsonCodec } from "azure-storage-concurrency/queue";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Queues: messages larger than 64 KiB through a claim-check";

interface Report {
  readonly name: string;
  readonly rows: readonly { readonly id: number; readonly text: string }[];
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const suffix = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;
  const queue = new QueueClient(connectionString, `reports-${suffix}`);
  const poisonQueue = new QueueClient(connectionString, `reports-${suffix}-poison`);
  const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(`payloads-${suffix}`);
  await queue.create();
  const claimCheck = new ClaimCheck(container, { compression: "gzip" });
  try {
    const big: Report = {
      name: "big",
      rows: Array.from({ length: 20_000 }, (_, id) => ({ id, text: `row ${id} `.repeat(10) })),
    };
    const small: Report = { name: "small", rows: [{ id: 1, text: "one row" }] };
    const bad: Report = { name: "bad", rows: Array.from({ length: 5_000 }, (_, id) => ({ id, text: "?".repeat(20) })) };
    for (const report of [big, small, bad]) {
      const sent = await claimCheck.sendMessage(queue, JSON.stringify(report), { contentType: "application/json" });
      log(
        `sent '${report.name}': ${JSON.stringify(report).length} characters, ` +
          (sent.payloadBlob
            ? `in blob '${sent.payloadBlob}', a ${sent.messageBytes}-byte reference in the queue`
            : "in the message itself"),
      );
    }

    let settled = 0;
    let done!: () => void;
    const allSettled = new Promise<void>((resolve) => (done = resolve));
    const consumer = new QueueConsumer<Report>(
      queue,
      async (report) => {
        if (report.name === "bad") throw new Error("this report cannot be processed");
        log(`handled '${report.name}': ${report.rows.length} rows`);
      },
      { codec: jsonCodec<Report>(), claimCheck, maxDequeueCount: 2, retryBackoff: fixedBackoff({ delayInMs: 0 }) },
    );
    for (const event of ["processed", "poisoned"] as const) consumer.on(event, () => ++settled === 3 && done());
    await consumer.start();
    await allSettled;
    await consumer.stop();

    const [copy] = (await poisonQueue.receiveMessages()).receivedMessageItems;
    const envelope = parsePoisonMessage(copy!.messageText)!;
    log(
      `'bad' went to the poison queue (${envelope.reason.split(";")[0]}); its payload is kept: '${envelope.payloadBlob}'`,
    );
    const left: string[] = [];
    for await (const blob of container.listBlobsFlat()) left.push(blob.name);
    log(
      `payload blobs left: ${left.length} (the poisoned one: the two settled messages' payloads were deleted with them)`,
    );

    // An orphan: the upload worked, the send did not (here: no such queue). The sweep removes it once
    // its message could no longer be delivered: here, a look ahead past its 7-day time to live.
    await claimCheck
      .sendMessage(new QueueClient(connectionString, `missing-${suffix}`), JSON.stringify(big))
      .catch((error: unknown) => log(`a send failed after its upload: ${(error as Error).message.split(".")[0]}`));
    const now = await claimCheck.sweep();
    const later = await claimCheck.sweep({ now: new Date(Date.now() + 8 * 24 * 3_600_000) });
    log(
      `sweep now: ${now.deleted} deleted, ${now.pending} still deliverable, ${now.poisoned} kept for the poison queue`,
    );
    log(`sweep 8 days later: ${later.deleted} deleted (the orphan), ${later.poisoned} kept for the poison queue`);
  } finally {
    await Promise.all([queue.deleteIfExists(), poisonQueue.deleteIfExists(), container.deleteIfExists()]);
  }
}

runIfMain(import.meta.url, { title, main });
