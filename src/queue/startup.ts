/**
 * What `QueueConsumer.start()` checks before the first receive, so that a consumer on a missing
 * queue or table, or with a refused credential, fails at once with a {@link ConsumerResourceError}
 * that names the resource and the fix, instead of running silently:
 *
 * 1. the queue: Get Queue Properties. A credential without read rights (a SAS with only process
 *    and update, enough to consume) answers 403 AuthorizationPermissionMismatch; the queue's
 *    existence is then left to the first receive, which ends the consumer on a 404.
 * 2. the poison queue: Get Queue Properties; created if it answers 404. A credential that may only
 *    add messages (least privilege) answers 403 AuthorizationPermissionMismatch: accepted, since
 *    such a credential can poison into an existing queue.
 * 3. the idempotency store: its `check()` (for the Table store, one read of a row that never
 *    exists: the table must exist and the credential must be able to read it).
 *
 * Each check runs under the request time limit; an ambiguous failure (the time limit, a network
 * failure, a 5xx) is tried again up to three times, then fails the start too (with `transient: true`).
 */
import type { QueueClient } from "@azure/storage-queue";
import { withTimeLimit } from "../internal/time-limit.js";
import { serviceCodeOf, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import type { StoreCalls } from "../idempotency/internal.js";
import { isConsumerResourceError, type ConsumerResource } from "./errors.js";
import type { PoisonQueueWriter } from "./poison.js";
import { MAX_TRIES } from "./hold.js";
import { isAmbiguous, resourceError } from "./requests.js";

interface StartupChecks {
  readonly queue: QueueClient;
  readonly poison: PoisonQueueWriter;
  readonly store: StoreCalls<unknown> | undefined;
  readonly requestTimeoutInMs: number;
}

/** Runs the checks; rejects with a {@link ConsumerResourceError} (or the abort reason when `abortSignal` fires). */
export async function checkResources(checks: StartupChecks, abortSignal: AbortSignal): Promise<void> {
  const { queue, poison, store, requestTimeoutInMs } = checks;
  const properties = (client: QueueClient) =>
    withTimeLimit(`read the properties of queue '${client.name}'`, requestTimeoutInMs, abortSignal, (signal) =>
      client.getProperties({ abortSignal: signal }),
    );

  await attempt("queue", queue.name, `read the properties of queue '${queue.name}'`, abortSignal, async () => {
    try {
      await properties(queue);
    } catch (error) {
      if (!cannotRead(error)) throw error;
      logger.verbose(
        `queue consumer: this credential may not read the properties of '${queue.name}'; the first receive checks that it exists`,
      );
    }
  });
  await attempt(
    "poisonQueue",
    poison.client.name,
    `check the poison queue '${poison.client.name}'`,
    abortSignal,
    async () => {
      try {
        await properties(poison.client);
      } catch (error) {
        if (cannotRead(error)) {
          logger.verbose(`queue consumer: this credential may not read '${poison.client.name}'; it is taken to exist`);
          return;
        }
        if (statusOf(error) !== 404) throw error;
        await poison.create(requestTimeoutInMs);
        logger.info(`queue consumer created the poison queue '${poison.client.name}'`);
      }
    },
  );
  if (store) {
    const name = store.store.resourceName ?? store.store.name;
    await attempt("idempotencyStore", name, `check the idempotency store '${name}'`, abortSignal, () =>
      store.check(abortSignal),
    );
  }
}

/** 403 AuthorizationPermissionMismatch: authenticated, but not allowed to read. */
function cannotRead(error: unknown): boolean {
  return statusOf(error) === 403 && serviceCodeOf(error) === "AuthorizationPermissionMismatch";
}

async function attempt(
  resource: ConsumerResource,
  name: string,
  operation: string,
  abortSignal: AbortSignal,
  check: () => Promise<void>,
): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      await check();
      return;
    } catch (error) {
      if (abortSignal.aborted || isConsumerResourceError(error)) throw error;
      // A slow first answer or a network blip is tried again; a definite answer (404, 403) is not.
      if (tries >= MAX_TRIES || !isAmbiguous(error)) throw resourceError(resource, name, operation, error);
    }
    await sleep(250 * tries, abortSignal);
  }
}
