/**
 * One process of the `lock` benchmark: runs C contenders, each with its own SDK client, that take
 * the same lock in a loop until the deadline (wait, hold, release, rest), counting every HTTP
 * request each contender makes, by kind. Prints one JSON line per acquisition (or unfinished wait).
 *
 * Modes: `library` uses blobLock(); `anchor` is the raw-SDK loop of the anchor (DistributedLock):
 * try to acquire, and on 409 sleep 250-1000 ms.
 *
 * Args: <mode> <container> <blob> <contenders> <go file> <hold ms> <rest ms> <poll interval ms, or `default`>
 * Env: the connection string (see ../workers.ts).
 *
 * Once loaded it prints `{"ready":true}` and waits for the go file, which holds the start and the
 * deadline (`{"startAt":…,"deadline":…}`, epoch ms): every process starts together however long
 * each took to load.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { statusOf } from "azure-storage-concurrency/errors";
import { blobLock, isLockTimeoutError } from "azure-storage-concurrency/lease";
import { countingContainer } from "../counting-client.js";
import { workerConnectionString } from "../workers.js";

const [mode, containerName, blobName, contenders, goFile, holdMs, restMs, pollIntervalInMs] = process.argv.slice(2);
let deadline = 0;
const now = () => performance.timeOrigin + performance.now();

type Taken = { release: () => Promise<void>; token: number | undefined } | undefined;

async function contender(index: number): Promise<void> {
  const kinds: Record<string, number> = {};
  const container = countingContainer(workerConnectionString(), containerName!, kinds, {}, { markRecordReads: true });
  const id = `${process.pid}-${index}`;
  const lock = blobLock(container, blobName!, {
    durationInSeconds: 15,
    holderName: id,
    ...(pollIntervalInMs === "default" ? {} : { pollIntervalInMs: Number(pollIntervalInMs) }),
  });
  const raw = container.getBlobClient(blobName!);

  const takeWithLibrary = async (): Promise<Taken> => {
    try {
      const handle = await lock.acquire({ timeoutInMs: Math.max(1, deadline - now()) });
      return { release: () => handle.release(), token: handle.fencingToken };
    } catch (error) {
      if (isLockTimeoutError(error)) return undefined;
      throw error;
    }
  };
  const takeLikeTheAnchor = async (): Promise<Taken> => {
    const lease = raw.getBlobLeaseClient(randomUUID());
    while (now() < deadline) {
      try {
        await lease.acquireLease(15);
        return { release: async () => void (await lease.releaseLease()), token: undefined };
      } catch (error) {
        if (statusOf(error) !== 409) throw error;
        await sleep(250 + Math.random() * 750);
      }
    }
    return undefined;
  };

  while (now() < deadline) {
    const waitStart = now();
    const kindsBefore = { ...kinds };
    const waitKinds = () =>
      Object.fromEntries(
        Object.entries(kinds)
          .map(([k, v]): [string, number] => [k, v - (kindsBefore[k] ?? 0)])
          .filter(([, v]) => v !== 0),
      );
    const taken = await (mode === "anchor" ? takeLikeTheAnchor() : takeWithLibrary());
    if (!taken) {
      console.log(JSON.stringify({ id, waitStart, waitEnd: now(), waitKinds: waitKinds() }));
      break;
    }
    const acquiredAt = now();
    const kindsOfWait = waitKinds();
    await sleep(Number(holdMs));
    const releaseStart = now();
    await taken.release();
    console.log(
      JSON.stringify({
        id,
        waitStart,
        acquiredAt,
        releaseStart,
        releasedAt: now(),
        token: taken.token,
        waitKinds: kindsOfWait,
      }),
    );
    await sleep(Number(restMs));
  }
}

console.log(JSON.stringify({ ready: true }));
while (!existsSync(goFile!)) await sleep(1);
const go = JSON.parse(readFileSync(goFile!, "utf8")) as { startAt: number; deadline: number };
deadline = go.deadline;
await sleep(Math.max(0, go.startAt - Date.now())); // start together
await Promise.all(Array.from({ length: Number(contenders) }, (_, i) => contender(i)));
