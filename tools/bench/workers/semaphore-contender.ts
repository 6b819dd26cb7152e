/**
 * One process of the `semaphore` benchmark: runs C contenders, each with its own SDK client, that
 * take a permit of the same semaphore in a loop until the deadline (wait, hold, release, rest),
 * counting every HTTP request each contender makes, by kind. Prints one JSON line per acquisition
 * (or unfinished wait), with the slot and its fencing token.
 *
 * Modes: `library` uses blobSemaphore(); `anchor` is the raw-SDK loop one would write without it:
 * try to acquire a lease on each slot blob in turn (in a random order), and when every one answers
 * 409, sleep 250-1000 ms (the sleep of the lock benchmark's anchor, DistributedLock's).
 *
 * Args: <mode> <container> <name> <max count> <contenders> <go file> <hold ms> <rest ms> <poll interval ms, or `default`>
 * Env: the connection string (see ../workers.ts). Starts on the go file as the lock's contenders do.
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { statusOf } from "azure-storage-concurrency/errors";
import { blobSemaphore, isSemaphoreTimeoutError } from "azure-storage-concurrency/semaphore";
import { countingContainer } from "../counting-client.js";
import { workerConnectionString } from "../workers.js";

const [mode, containerName, name, maxCount, contenders, goFile, holdMs, restMs, pollIntervalInMs] =
  process.argv.slice(2);
let deadline = 0;
const now = () => performance.timeOrigin + performance.now();

type Taken = { release: () => Promise<void>; slot: number; token: number | undefined } | undefined;

async function contender(index: number): Promise<void> {
  const kinds: Record<string, number> = {};
  const container = countingContainer(workerConnectionString(), containerName!, kinds);
  const id = `${process.pid}-${index}`;
  const semaphore = blobSemaphore(container, name!, {
    maxCount: Number(maxCount),
    durationInSeconds: 15,
    holderName: id,
    ...(pollIntervalInMs === "default" ? {} : { pollIntervalInMs: Number(pollIntervalInMs) }),
  });

  const takeWithLibrary = async (): Promise<Taken> => {
    try {
      const permit = await semaphore.acquire({ timeoutInMs: Math.max(1, deadline - now()) });
      return { release: () => permit.release(), slot: permit.slot, token: permit.fencingToken };
    } catch (error) {
      if (isSemaphoreTimeoutError(error)) return undefined;
      throw error;
    }
  };
  const takeLikeTheAnchor = async (): Promise<Taken> => {
    while (now() < deadline) {
      const order = Array.from({ length: Number(maxCount) }, (_, slot) => slot).sort(() => Math.random() - 0.5);
      for (const slot of order) {
        const lease = container.getBlobClient(`${name}/slot-${slot}`).getBlobLeaseClient(randomUUID());
        try {
          await lease.acquireLease(15);
          return { release: async () => void (await lease.releaseLease()), slot, token: undefined };
        } catch (error) {
          if (statusOf(error) !== 409) throw error;
        }
      }
      await sleep(250 + Math.random() * 750);
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
        slot: taken.slot,
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
