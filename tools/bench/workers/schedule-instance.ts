/**
 * One instance of the `schedule` benchmark: schedules a job every `everyMs` until the deadline,
 * counting every HTTP request it makes. The job itself makes none: what is counted is the
 * schedule's own cost. Prints one JSON line per job call (`{"run":…,"at":…}`) and, at the end, its
 * request counts (`{"requests":…,"kinds":{…}}`).
 *
 * Modes: `library` uses schedule() with `catchUp: "all"`; `anchor` is the raw-SDK loop a fleet
 * writes by hand (and close to what Azure Functions' timer does with its status blob): at each
 * tick, try the lease; the instance that gets it reads the status blob, runs the tick unless the
 * status says it ran, writes the status with `If-Match`, and releases. No catch-up: a tick that fell
 * due while every instance was down is not run.
 *
 * Args: <mode> <container> <schedule name> <every ms> <go file>
 * Env: the connection string (see ../workers.ts).
 *
 * Once loaded it prints `{"ready":true}` and waits for the go file (`{"startAt":…,"deadline":…}`,
 * epoch ms), so that every instance starts together however long each took to load.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { BlobServiceClient, newPipeline, type ContainerClient } from "@azure/storage-blob";
import { statusOf } from "azure-storage-concurrency/errors";
import { schedule } from "azure-storage-concurrency/schedule";
import { workerConnectionString } from "../workers.js";

const [mode, containerName, name, everyMs, goFile] = process.argv.slice(2);
const every = Number(everyMs);
const kinds: Record<string, number> = {};
const print = (line: Record<string, unknown>) => console.log(JSON.stringify(line));

/** A container client whose every HTTP request (after the SDK's retries: one per request on the wire) is counted by kind. */
function countingContainer(): ContainerClient {
  const base = BlobServiceClient.fromConnectionString(workerConnectionString());
  const pipeline = newPipeline(base.credential);
  pipeline.factories.push({
    create: (next) => ({
      sendRequest: async (request) => {
        const what = request.url.includes("comp=lease")
          ? (request.headers.get("x-ms-lease-action") ?? "lease")
          : request.url.includes("comp=metadata")
            ? "metadata"
            : request.method.toLowerCase();
        let status: number | string = "failed";
        try {
          const response = await next.sendRequest(request);
          status = response.status;
          return response;
        } catch (error) {
          status = statusOf(error) ?? "failed";
          throw error;
        } finally {
          const kind = `${what}-${status}`;
          kinds[kind] = (kinds[kind] ?? 0) + 1;
        }
      },
    }),
  });
  return new BlobServiceClient(base.url, pipeline).getContainerClient(containerName!);
}

/** The anchor's loop: see the module's description. */
async function anchor(container: ContainerClient, deadline: number): Promise<void> {
  const lockBlob = container.getBlockBlobClient(`${name}-anchor/lock`);
  const statusBlob = container.getBlockBlobClient(`${name}-anchor/status.json`);
  for (let tick = (Math.floor(Date.now() / every) + 1) * every; tick < deadline; tick += every) {
    await sleep(Math.max(0, tick - Date.now()));
    if (Date.now() - tick > every) continue; // this instance was paused past the tick: not caught up
    const lease = lockBlob.getBlobLeaseClient(randomUUID());
    try {
      await lease.acquireLease(15);
    } catch (error) {
      if (statusOf(error) === 409) continue; // another instance has it
      if (statusOf(error) !== 404) throw error;
      await lockBlob.upload("", 0, { conditions: { ifNoneMatch: "*" } }).catch(() => undefined);
      continue;
    }
    try {
      let last = 0;
      let etag: string | undefined;
      try {
        const read = await statusBlob.download();
        etag = read.etag;
        const chunks: Buffer[] = [];
        for await (const chunk of read.readableStreamBody!) chunks.push(chunk as Buffer);
        last = (JSON.parse(Buffer.concat(chunks).toString()) as { lastTick: number }).lastTick;
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
      if (last >= tick) continue;
      print({ run: tick, at: Date.now() });
      const body = JSON.stringify({ lastTick: tick });
      await statusBlob.upload(body, body.length, { conditions: etag ? { ifMatch: etag } : { ifNoneMatch: "*" } });
    } finally {
      await lease.releaseLease().catch(() => undefined);
    }
  }
}

async function library(container: ContainerClient, deadline: number): Promise<void> {
  const s = schedule(
    container,
    name!,
    { everyInMs: every },
    ({ tick }) => print({ run: tick.dueAt.getTime(), at: Date.now() }),
    { catchUp: "all", leaseDurationInSeconds: 15, requestTimeoutInMs: 5_000 },
  );
  await s.start();
  await sleep(Math.max(0, deadline - Date.now()));
  // The measured window ends a second before the deadline. On a loaded machine a catch-up can still
  // be under way then: wait (at most 10 s, the requests counted) until the status has settled the
  // window's last tick, so that `missedTicks` counts ticks that never ran, not ticks not run yet.
  const windowLast = Math.floor((deadline - 1_000) / every) * every;
  for (const giveUpAt = Date.now() + 10_000; Date.now() < giveUpAt; await sleep(100)) {
    const status = await s.readStatus().catch(() => undefined);
    if (status?.lastTick && Date.parse(status.lastTick) >= windowLast) break;
  }
  await s.stop({ gracePeriodInMs: 1_000 });
}

print({ ready: true });
while (!existsSync(goFile!)) await sleep(1);
const go = JSON.parse(readFileSync(goFile!, "utf8")) as { startAt: number; deadline: number };
await sleep(Math.max(0, go.startAt - Date.now()));
const container = countingContainer();
await (mode === "anchor" ? anchor(container, go.deadline) : library(container, go.deadline));
print({ requests: Object.values(kinds).reduce((sum, n) => sum + n, 0), kinds });
