/**
 * `OutboxRelay`: the send side of the transactional outbox. One relay at a time per partition range
 * (leader election over a blob lease in `lockContainer`: `startLeaderElection` from the lease
 * feature) lists the outbox rows of its range, sends each row's message and deletes the row, in
 * sequence order per partition (relay-pass.ts), then waits (`pollIntervalInMs`, doubling while there
 * is nothing to do, up to `maxPollIntervalInMs`; `notify()` ends the wait at once).
 *
 * Leadership is what keeps two relays of a range from sending side by side. It is not what makes
 * the messages exactly-once: a relay that lost its lease mid-send (a paused process) may send a row
 * the next leader sends too. Both copies carry the row's id, and the consumer's idempotency store
 * handles them once; the copy of an earlier row never overtakes the first copy of a later one.
 *
 * The relay is an owned background activity: `stop()` resolves only once the pass in flight has
 * ended and the lease is released, and no timer of it keeps the process alive.
 */
import { createHash, randomUUID } from "node:crypto";
import type { TableClient } from "@azure/data-tables";
import type { ContainerClient } from "@azure/storage-blob";
import type { QueueClient } from "@azure/storage-queue";
import type { ClaimCheck } from "../claim-check/index.js";
import { describeError } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import { sleep } from "../internal/sleep.js";
import { checkNonEmptyString, checkOptionalSignal, describeValue, optionalNumber } from "../internal/validate.js";
import { blobLeasable, startLeaderElection, type LeaderElection } from "../lease/index.js";
import { relayPass, type OutboxRelayedMessage, type RelayPassContext } from "./relay-pass.js";
import { checkOutboxName } from "./rows.js";

/** Options for {@link OutboxRelay}. */
export interface OutboxRelayOptions {
  /**
   * Sends the messages: payloads too large for the queue go to its blobs. Give the consumers a
   * claim-check on the same container (`QueueConsumer`'s `claimCheck` option): it also reads the
   * id each message carries, which becomes their default idempotency key.
   */
  readonly claimCheck: ClaimCheck;
  /** Where the relays' leader-election lease blobs live (one per outbox and partition range). */
  readonly lockContainer: ContainerClient;
  /** The outbox's name, as given to `TableOutbox`. @default "default" */
  readonly name?: string;
  /**
   * The PartitionKeys this relay covers: from `from` (included) to `to` (excluded); each range has
   * a leader of its own. Ranges of several relays must not overlap.
   * @default every partition
   */
  readonly partitionKeyRange?: {
    /** The first PartitionKey relayed (inclusive); from the first when left out. */
    readonly from?: string;
    /** The PartitionKey the range ends before (exclusive); to the last when left out. */
    readonly to?: string;
  };
  /** This relay's name in the election and in logs. @default `outbox-relay-<random>` */
  readonly identity?: string;
  /**
   * The wait after a pass that relayed nothing, in milliseconds; it doubles with each idle pass up
   * to `maxPollIntervalInMs`, and a pass that relays something resets it.
   * @default 1000
   */
  readonly pollIntervalInMs?: number;
  /** The longest wait between passes, in milliseconds. @default 30000 */
  readonly maxPollIntervalInMs?: number;
  /** The client-side time limit of each request the relay makes on its own (list, delete; sends: the claim-check's). @default 10000 */
  readonly requestTimeoutInMs?: number;
  /** Partitions relayed side by side in a pass (each in order). @default 4 */
  readonly maxConcurrentPartitions?: number;
  /** The time to live of messages whose row gives none, in seconds. @default 604800 (7 days) */
  readonly messageTimeToLive?: number;
  /** The election's lease duration, in seconds (15 to 60): how long a crashed relay keeps its range. @default 15 */
  readonly leaseDurationInSeconds?: number;
  /** See `startLeaderElection`: how long the leader goes on without a successful renewal. @default 10000 */
  readonly renewDeadlineInMs?: number;
  /** See `startLeaderElection`: how often a candidate looks at the lease, and the leader renews. @default 2000 */
  readonly retryPeriodInMs?: number;
  /**
   * Whether a running relay keeps the Node.js process alive, as a listening server does (its waits
   * and the election's timers do not). Set false when something else owns the process's lifetime.
   * @default true
   */
  readonly keepAlive?: boolean;
  /** Stops the relay when aborted (as `stop()`). */
  readonly abortSignal?: AbortSignal;
}

/** The relay's events and what each listener receives. */
export interface OutboxRelayEvents {
  /** This relay leads its range now. */
  leading: Record<string, never>;
  /** This relay stopped leading (lost its lease, or is stopping). */
  stoppedLeading: Record<string, never>;
  /** A row was relayed: its message sent, its row deleted. */
  sent: OutboxRelayedMessage;
  /** Something failed; the relay goes on (the row is sent again by a later pass). */
  error: {
    /** The failure. */
    readonly error: unknown;
    /** What the relay was doing, e.g. `"send an outbox message"`. */
    readonly operation: string;
    /** The partition concerned, when there is one. */
    readonly partitionKey: string | undefined;
  };
}

/** `idle` (not started), `running` (campaigning or leading), `stopping`, `stopped`. */
export type OutboxRelayStatus = "idle" | "running" | "stopping" | "stopped";

/** Unsubscribes an event listener. */
export interface OutboxRelayListener {
  /** Removes the listener. */
  dispose(): void;
}

/**
 * Sends what `TableOutbox` wrote, one relay per partition range at a time.
 *
 * @example
 * ```ts
 * import { BlobServiceClient } from "@azure/storage-blob";
 * import { ClaimCheck } from "azure-storage-concurrency/claim-check";
 * import { OutboxRelay } from "azure-storage-concurrency/outbox";
 *
 * const blobs = BlobServiceClient.fromConnectionString(connectionString);
 * const relay = new OutboxRelay(tableClient, queueClient, {
 *   claimCheck: new ClaimCheck(blobs.getContainerClient("payloads")),
 *   lockContainer: blobs.getContainerClient("locks"),
 * });
 * relay.on("error", ({ operation, error }) => console.warn(`outbox relay could not ${operation}`, error));
 * await relay.start();
 * process.once("SIGTERM", () => void relay.stop());
 * ```
 */
export class OutboxRelay implements AsyncDisposable {
  readonly #context: RelayPassContext;
  readonly #lockContainer: ContainerClient;
  readonly #identity: string;
  readonly #pollIntervalInMs: number;
  readonly #maxPollIntervalInMs: number;
  readonly #election: { leaseDurationInSeconds: number; renewDeadlineInMs: number; retryPeriodInMs: number };
  readonly #abortSignal: AbortSignal | undefined;
  readonly #keepAlive: boolean;
  #aliveTimer: NodeJS.Timeout | undefined;
  readonly #listeners = new Map<keyof OutboxRelayEvents, Set<(payload: never) => void>>();
  #status: OutboxRelayStatus = "idle";
  #leader: LeaderElection | undefined;
  #wake = new AbortController();
  #removeAbortListener: (() => void) | undefined;
  #stopping: Promise<void> | undefined;

  /**
   * @param tableClient - the table `TableOutbox` writes to.
   * @param queueClient - where the messages go.
   * @param options - see {@link OutboxRelayOptions}; checked here.
   */
  constructor(tableClient: TableClient, queueClient: QueueClient, options: OutboxRelayOptions) {
    if (typeof tableClient?.listEntities !== "function")
      throw new TypeError("`tableClient` must be a TableClient from @azure/data-tables.");
    if (typeof queueClient?.sendMessage !== "function")
      throw new TypeError("`queueClient` must be a QueueClient from @azure/storage-queue.");
    if (typeof options !== "object" || options === null)
      throw new TypeError("`options` must be an object with `claimCheck` and `lockContainer`.");
    if (typeof options.claimCheck?.sendMessage !== "function")
      throw new TypeError("`claimCheck` must be a ClaimCheck (new ClaimCheck(containerClient)).");
    if (typeof options.lockContainer?.getBlockBlobClient !== "function")
      throw new TypeError("`lockContainer` must be a ContainerClient from @azure/storage-blob.");
    checkOptionalSignal("abortSignal", options.abortSignal);
    const range = checkRange(options.partitionKeyRange);
    const name = options.name === undefined ? "default" : checkOutboxName(options.name);
    this.#pollIntervalInMs = optionalNumber("pollIntervalInMs", options.pollIntervalInMs, 1_000, { min: 1 });
    this.#maxPollIntervalInMs = optionalNumber("maxPollIntervalInMs", options.maxPollIntervalInMs, 30_000, {
      min: this.#pollIntervalInMs,
    });
    this.#identity =
      options.identity === undefined
        ? `outbox-relay-${randomUUID()}`
        : checkNonEmptyString("identity", options.identity);
    this.#election = {
      leaseDurationInSeconds: optionalNumber("leaseDurationInSeconds", options.leaseDurationInSeconds, 15, {
        min: 15,
        max: 60,
        integer: true,
      }),
      renewDeadlineInMs: optionalNumber("renewDeadlineInMs", options.renewDeadlineInMs, 10_000, { min: 1 }),
      retryPeriodInMs: optionalNumber("retryPeriodInMs", options.retryPeriodInMs, 2_000, { min: 10 }),
    };
    if (options.keepAlive !== undefined && typeof options.keepAlive !== "boolean")
      throw new TypeError("`keepAlive` must be a boolean.");
    this.#keepAlive = options.keepAlive ?? true;
    this.#lockContainer = options.lockContainer;
    this.#abortSignal = options.abortSignal;
    this.#context = {
      table: tableClient,
      queue: queueClient,
      claimCheck: options.claimCheck,
      name,
      range,
      requestTimeoutInMs: optionalNumber("requestTimeoutInMs", options.requestTimeoutInMs, 10_000, { min: 1 }),
      maxConcurrentPartitions: optionalNumber("maxConcurrentPartitions", options.maxConcurrentPartitions, 4, {
        min: 1,
        integer: true,
      }),
      messageTimeToLive: optionalNumber("messageTimeToLive", options.messageTimeToLive, 604_800, {
        min: 1,
        integer: true,
      }),
      onSent: (message) => this.#emit("sent", message),
      onError: (error, operation, partitionKey) => {
        logger.warning(`outbox relay ${this.#identity} could not ${operation}: ${describeError(error)}`);
        this.#emit("error", { error, operation, partitionKey });
      },
    };
  }

  /** `idle`, `running`, `stopping` or `stopped`. */
  get status(): OutboxRelayStatus {
    return this.#status;
  }

  /** Whether this relay leads its range now. */
  get isLeader(): boolean {
    return this.#leader?.isLeader ?? false;
  }

  /** This relay's name in the election. */
  get identity(): string {
    return this.#identity;
  }

  /** The blob whose lease decides who relays the range (in `lockContainer`). */
  get lockBlobName(): string {
    const { table, name, range } = this.#context;
    const rangeKey = createHash("sha256")
      .update(`${range.from ?? ""}\u0000${range.to ?? "\uffff"}`)
      .digest("hex")
      .slice(0, 16);
    return `outbox-relay/${table.tableName}/${name}/${rangeKey}`;
  }

  /** Subscribes to an event; `dispose()` the result to unsubscribe. */
  on<K extends keyof OutboxRelayEvents>(
    event: K,
    listener: (payload: OutboxRelayEvents[K]) => void,
  ): OutboxRelayListener {
    if (typeof listener !== "function") throw new TypeError("`listener` must be a function.");
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return { dispose: () => void set.delete(listener) };
  }

  /**
   * Starts campaigning for the range (and relaying while leading). Resolves at once: leading comes
   * when the lease is free (`leading` event). A relay starts once: after `stop()`, make a new one.
   */
  async start(): Promise<this> {
    if (this.#status !== "idle")
      throw new Error(`The relay is ${this.#status}: a relay starts once; create a new OutboxRelay.`);
    this.#status = "running";
    const signal = this.#abortSignal;
    if (signal) {
      const onAbort = () => void this.stop();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#removeAbortListener = () => signal.removeEventListener("abort", onAbort);
      if (signal.aborted) {
        await this.stop();
        return this;
      }
    }
    if (this.#keepAlive) this.#aliveTimer = setInterval(() => undefined, 2 ** 30);
    this.#leader = startLeaderElection(blobLeasable(this.#lockContainer, this.lockBlobName), {
      identity: this.#identity,
      ...this.#election,
      onStartedLeading: (abortSignal) => this.#lead(abortSignal),
      onStoppedLeading: () => this.#emit("stoppedLeading", {}),
    });
    logger.info(`outbox relay ${this.#identity} started on table '${this.#context.table.tableName}'`);
    return this;
  }

  /** Ends the wait between passes now: call it after a write, for the lowest latency. Nothing when not leading. */
  notify(): void {
    this.#wake.abort();
  }

  /** Stops relaying and campaigning; resolves once the pass in flight has ended and the lease is released. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#removeAbortListener?.();
      if (this.#status === "idle") {
        this.#status = "stopped";
        return;
      }
      this.#status = "stopping";
      this.#wake.abort();
      await this.#leader?.stop();
      clearInterval(this.#aliveTimer);
      this.#status = "stopped";
      logger.info(`outbox relay ${this.#identity} stopped`);
    })();
    return this.#stopping;
  }

  /** Same as `stop()`, for `await using relay = await new OutboxRelay(…).start()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** The work while leading: passes, and waits between them, until the leadership ends. */
  async #lead(leading: AbortSignal): Promise<void> {
    this.#emit("leading", {});
    let idlePasses = 0;
    while (!leading.aborted) {
      let relayed = 0;
      try {
        relayed = (await relayPass(this.#context, leading)).relayed;
      } catch (error) {
        if (leading.aborted) break;
        this.#context.onError(error, "list the outbox rows", undefined);
      }
      if (this.#wake.signal.aborted) {
        // notify() during the pass: a write may have come after the listing saw its partition.
        this.#wake = new AbortController();
        idlePasses = 0;
        continue;
      }
      if (relayed > 0) {
        idlePasses = 0;
        continue; // more may have come meanwhile
      }
      idlePasses += 1;
      const waitInMs = Math.min(this.#maxPollIntervalInMs, this.#pollIntervalInMs * 2 ** Math.min(idlePasses - 1, 20));
      const woken = this.#wake.signal;
      await sleep(waitInMs, AbortSignal.any([leading, woken]), { unref: true }).catch(() => undefined);
      if (woken.aborted) idlePasses = 0;
    }
  }

  #emit<K extends keyof OutboxRelayEvents>(event: K, payload: OutboxRelayEvents[K]): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) {
      try {
        (listener as (payload: OutboxRelayEvents[K]) => void)(payload);
      } catch (error) {
        logger.warning(`An outbox relay '${event}' listener threw: ${describeError(error)}`);
      }
    }
  }
}

function checkRange(value: unknown): { from?: string; to?: string } {
  if (value === undefined) return {};
  if (typeof value !== "object" || value === null)
    throw new TypeError("`partitionKeyRange` must be an object { from?, to? }.");
  const { from, to } = value as { from?: unknown; to?: unknown };
  if (from !== undefined && typeof from !== "string")
    throw new TypeError(`\`partitionKeyRange.from\` must be a string, got ${describeValue(from)}.`);
  if (to !== undefined && typeof to !== "string")
    throw new TypeError(`\`partitionKeyRange.to\` must be a string, got ${describeValue(to)}.`);
  if (from !== undefined && to !== undefined && from >= to)
    throw new RangeError(
      `\`partitionKeyRange.from\` (${describeValue(from)}) must sort before \`to\` (${describeValue(to)}).`,
    );
  return { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) };
}
