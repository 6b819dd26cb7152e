/**
 * The requests on the status blob: reading it, creating it, and applying a transition
 * (`./status.ts`) through the optimistic engine (`../optimistic/`: read, decide, write with
 * `If-Match`; a write whose answer was lost is recognised by the write id it stored, never applied
 * twice).
 *
 * Every call runs under a client-side time limit (`../internal/time-limit.ts`): a transition gets
 * three request times (a read, a write, and a read back after a lost answer, whose own requests the
 * engine limits to one request time each). One that fails without settling
 * (a time limit, a network failure, a 5xx, an outcome the engine could not tell) is tried again,
 * at most {@link TRIES} times: each transition recognises its own earlier write by the run id it
 * carries, so trying again either finds it applied or applies it once.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { statusOf } from "../errors.js";
import { describeError } from "../internal/describe-error.js";
import { sleep, uniform } from "../internal/sleep.js";
import { withTimeLimit } from "../internal/time-limit.js";
import {
  blobJsonCell,
  isCellContentError,
  isOptimisticOutcomeUnknownError,
  optimisticUpdate,
  readCell,
  SKIP_WRITE,
  type VersionedCell,
} from "../optimistic/index.js";
import { classifyError, wrapStorageError } from "../retry/index.js";
import { ScheduleStatusError } from "./errors.js";
import { statusProblem, type ScheduleStatusRecord } from "./status.js";

/** How many times a read or a transition is tried before its failure is passed on. */
const TRIES = 3;

/** The status blob of one schedule. */
export class StatusCell {
  readonly blobName: string;
  readonly description: string;
  readonly #cell: VersionedCell<ScheduleStatusRecord>;
  readonly #container: ContainerClient;
  readonly #requestTimeoutInMs: number;

  constructor(container: ContainerClient, blobName: string, requestTimeoutInMs: number) {
    this.blobName = blobName;
    this.#container = container;
    this.#cell = blobJsonCell<ScheduleStatusRecord>(container.getBlockBlobClient(blobName));
    this.description = this.#cell.description;
    this.#requestTimeoutInMs = requestTimeoutInMs;
  }

  /** Reads the status (`undefined` when there is none yet); transient failures are tried again. */
  async read(abortSignal?: AbortSignal): Promise<ScheduleStatusRecord | undefined> {
    const snapshot = await this.#tried(`read ${this.description}`, abortSignal, 1, (signal) =>
      readCell(this.#cell, { abortSignal: signal }),
    );
    if (!snapshot.exists) return undefined;
    return this.#checked(snapshot.value);
  }

  /**
   * Creates the status with `initial` unless it exists (`If-None-Match: *`), and the container when
   * it is missing and `createContainer` allows. Answers the stored status.
   */
  async ensure(
    initial: () => ScheduleStatusRecord,
    { createContainer, abortSignal }: { readonly createContainer: boolean; readonly abortSignal?: AbortSignal },
  ): Promise<ScheduleStatusRecord> {
    const existing = await this.read(abortSignal).catch(async (error: unknown) => {
      if (!createContainer || statusOf(error) !== 404) throw error;
      await withTimeLimit(
        `create container '${this.#container.containerName}'`,
        this.#requestTimeoutInMs,
        abortSignal,
        (signal) => this.#container.createIfNotExists({ abortSignal: signal }),
      );
      return this.read(abortSignal);
    });
    if (existing) return existing;
    return this.apply(`create ${this.description}`, abortSignal, (current) => {
      if (current) return { next: undefined, decision: current };
      const created = initial();
      return { next: created, decision: created };
    });
  }

  /**
   * Applies a transition: `decide` gets the stored status and answers the status to write
   * (`undefined`: nothing) and its decision, which this resolves with (the decision made on the
   * version finally stored). `decide` may run several times: it must be pure.
   */
  async apply<D>(
    operation: string,
    abortSignal: AbortSignal | undefined,
    decide: (current: ScheduleStatusRecord | undefined) => { next: ScheduleStatusRecord | undefined; decision: D },
  ): Promise<D> {
    let decision: { value: D } | undefined;
    await this.#tried(operation, abortSignal, 3, (signal) =>
      optimisticUpdate(
        this.#cell,
        (current) => {
          const made = decide(current === undefined ? undefined : this.#checked(current));
          decision = { value: made.decision };
          return made.next ?? SKIP_WRITE;
        },
        {
          abortSignal: signal,
          // Several schedules of one process may share the blob (tests, benchmarks): never one round.
          coalesce: false,
          maxAttempts: 5,
          recoveryTimeoutInMs: this.#requestTimeoutInMs,
        },
      ),
    );
    return decision!.value;
  }

  /** Runs `call` within `requests` request times; tries it again after failures that may pass. */
  async #tried<T>(
    operation: string,
    abortSignal: AbortSignal | undefined,
    requests: number,
    call: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeLimit(operation, requests * this.#requestTimeoutInMs, abortSignal, call);
      } catch (error) {
        if (isCellContentError(error)) throw this.#unreadable(describeError(error), error);
        if (abortSignal?.aborted || attempt >= TRIES || !mayPass(error)) throw wrapStorageError(error, operation);
        await sleep(uniform(50, 150) * attempt, abortSignal);
      }
    }
  }

  #checked(value: ScheduleStatusRecord): ScheduleStatusRecord {
    const problem = statusProblem(value);
    if (problem !== undefined) throw this.#unreadable(problem);
    return value;
  }

  #unreadable(problem: string, cause?: unknown): ScheduleStatusError {
    return new ScheduleStatusError(
      `The schedule's status ${this.description} cannot be read: ${problem}. Nothing was written over it; ` +
        "look at it, and delete it to start the schedule afresh (ticks before then do not run).",
      { blobName: this.blobName, cause },
    );
  }
}

/** A failure that trying again may cure: transient, or an outcome nobody could tell. */
function mayPass(error: unknown): boolean {
  return isOptimisticOutcomeUnknownError(error) || classifyError(error).transient;
}
