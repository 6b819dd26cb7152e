/**
 * Every name the library emits through OpenTelemetry: spans, their attributes and events, and
 * metric instruments. `docs/observability.md` lists each one (a test checks that it does), so an
 * operator can look up what a name in their tracing backend means.
 *
 * Library names start with `asc.` (azure-storage-concurrency); the queue consumer's spans follow
 * OpenTelemetry's messaging semantic conventions (`messaging.*`), and so do its metrics
 * `messaging.process.duration` and `messaging.client.consumed.messages`
 * (https://opentelemetry.io/docs/specs/semconv/messaging/messaging-metrics/). Durations are in
 * seconds, as the semantic conventions ask, with second-scale bucket boundaries (`./otel.ts`).
 *
 * Renamed in 0.2 (a breaking change for dashboards, listed in CHANGELOG.md and
 * docs/observability.md): `asc.target` became the `asc.resource.*` attributes and `server.address`,
 * `asc.queue.messages` became `messaging.client.consumed.messages`, `asc.queue.handler.duration`
 * became `messaging.process.duration`.
 */

/** The instrumentation scope: the tracer's and the meter's name. */
export const SCOPE_NAME = "azure-storage-concurrency";

/** Span names (low cardinality: what varies goes into attributes). */
export const SPAN = {
  /** One `optimisticUpdate` call, from its call to its outcome. */
  optimisticUpdate: "asc.optimistic.update",
  /** One `LeaseLock.acquire` (waiting) or `tryAcquire` call. */
  lockAcquire: "asc.lock.acquire",
  /** A held lock was lost (short span at the moment of the loss). */
  lockLost: "asc.lock.lost",
  /** A background renewal of a held lock failed (short span, one per failed renewal). */
  lockRenewalFailed: "asc.lock.renewal_failed",
  /** One `BlobSemaphore.acquire` (waiting) or `tryAcquire` call. */
  semaphoreAcquire: "asc.semaphore.acquire",
  /** This process became or stopped being the leader of an election (short span). */
  leaderChange: "asc.leader.change",
  /** One `writeBatch` call: every transaction it sent. */
  batchWrite: "asc.tables.batch_write",
  /** The consumer processing one message (name per the messaging conventions: `process <queue>`). */
  messageProcess: "process",
  /** One run of a scheduled job by this instance: from its claim to its recorded end. */
  scheduleRun: "asc.schedule.run",
  /** One `ClaimCheck.sendMessage` call: the upload (when the payload goes to a blob) and the send. */
  claimCheckSend: "asc.claim_check.send",
  /** One `ClaimCheck.sweep` call. */
  claimCheckSweep: "asc.claim_check.sweep",
  /** One outbox row relayed: its message sent, its row deleted. */
  outboxRelay: "asc.outbox.relay",
} as const;

/** Span attributes. */
export const ATTR = {
  /** What the operation is on: `blob`, `container`, `container_metadata`, `file`, `share`, `table`, `table_entity`, `queue`. */
  resourceKind: "asc.resource.kind",
  /** The container, share, table or queue the operation is on (or in). */
  resourceContainer: "asc.resource.container",
  /** The blob's name, or the file's path in its share. */
  resourceName: "asc.resource.name",
  /** A table entity's PartitionKey and RowKey. */
  resourcePartitionKey: "asc.resource.partition_key",
  resourceRowKey: "asc.resource.row_key",
  /** A cell or leasable of the application's own: its `description`. */
  resourceDescription: "asc.resource.description",
  /** The storage account's host, per the general conventions (never the path or the query of a URL). */
  serverAddress: "server.address",
  /** How the operation ended; the values are listed with each span in docs/observability.md. */
  outcome: "asc.outcome",
  /** Optimistic update: read-modify-write rounds needed. */
  attempts: "asc.optimistic.attempts",
  /** Optimistic update: conflicts met (412/409) before the write landed. */
  conflicts: "asc.optimistic.conflicts",
  /** Optimistic update: updates that shared the round's write (coalescing). */
  coalesced: "asc.optimistic.coalesced",
  /** Optimistic update: a write whose response was lost was found applied by reading back. */
  recoveredLostResponse: "asc.optimistic.recovered_lost_response",
  /** Lock: how long the caller waited, in seconds. */
  lockWait: "asc.lock.wait_seconds",
  /** Lock: `true` for `acquire` (waits until it gets the lock), `false` for `tryAcquire`. */
  lockWaits: "asc.lock.waits",
  /** Lock: acquisition requests made (each look at a held lock counts). */
  lockAttempts: "asc.lock.attempts",
  /** Lock: the fencing token of the acquisition. */
  fencingToken: "asc.lock.fencing_token",
  /** Lock: the holder this process records (`name on host (pid n)`). */
  holder: "asc.lock.holder",
  /** Lock: the holder seen while waiting, if any. */
  previousHolder: "asc.lock.previous_holder",
  /** Lock loss: why (`renewal-rejected`, `lease-gone`, `expiry-guard`). */
  lossReason: "asc.lock.loss_reason",
  /** Lock: how long it was held, in seconds. */
  heldFor: "asc.lock.held_seconds",
  /** Semaphore: how many permits the caller counts (`maxCount`). */
  semaphoreMaxCount: "asc.semaphore.max_count",
  /** Semaphore: `true` for `acquire` (waits until it gets a permit), `false` for `tryAcquire`. */
  semaphoreWaits: "asc.semaphore.waits",
  /** Semaphore: how long the caller waited, in seconds. */
  semaphoreWait: "asc.semaphore.wait_seconds",
  /** Semaphore: the looks at the slots made for the call (one listing each). */
  semaphoreLooks: "asc.semaphore.looks",
  /** Semaphore: the slot of the permit acquired (its fencing token is `asc.lock.fencing_token`). */
  semaphoreSlot: "asc.semaphore.slot",
  /** Leader election: `elected` or `stepped-down`. */
  leaderTransition: "asc.leader.transition",
  /** Leader election: this process's identity. */
  leaderIdentity: "asc.leader.identity",
  /** Batch write: entity group transactions planned. */
  transactions: "asc.tables.transactions",
  /** Batch write: actions (operations) in the batch. */
  operations: "asc.tables.operations",
  /** Batch write: transactions that committed / failed / were not sent. */
  committedTransactions: "asc.tables.transactions.committed",
  failedTransactions: "asc.tables.transactions.failed",
  notSentTransactions: "asc.tables.transactions.not_sent",
  /** Messaging conventions: the messaging system. */
  messagingSystem: "messaging.system",
  /** Messaging conventions: the queue's name. */
  messagingDestination: "messaging.destination.name",
  /** Messaging conventions: the operation (`process`). */
  messagingOperationName: "messaging.operation.name",
  messagingOperationType: "messaging.operation.type",
  /** Messaging conventions: the message id. */
  messagingMessageId: "messaging.message.id",
  /** The message's dequeue count (Azure Queue Storage's delivery count). */
  dequeueCount: "messaging.azure_queue.message.dequeue_count",
  /** Consumer: the handler's time limit (`handlerTimeoutInMs`), in seconds, when one is set. */
  handlerTimeout: "asc.queue.handler_timeout_seconds",
  /** Error type, per the general conventions: the error's `code`, or its class name. */
  errorType: "error.type",
  /** Retry budget: its name (`RetryBudgetOptions.name`). */
  retryBudget: "asc.retry_budget.name",
  /** Rate limiter: its name (`AdaptiveRateLimiterOptions.name`). */
  rateLimiter: "asc.throttling.limiter",
  /** Rate limiter: what kind of key was cut (`table`, `queue`, `blob`, `file`, `account`). */
  throttledScope: "asc.throttling.scope",
  /** Scheduled job: the tick's due time (ISO 8601 UTC). */
  scheduleTick: "asc.schedule.tick",
  /** Scheduled job: 1 for a tick's first run, more when the run takes over one that did not end. */
  scheduleAttempt: "asc.schedule.attempt",
  /** Scheduled job: how late after its due time the run started, in seconds (this instance's clock). */
  scheduleLate: "asc.schedule.late_seconds",
  /** Claim-check send: the size of the message text sent, in UTF-8 bytes. */
  claimCheckMessageBytes: "asc.claim_check.message_bytes",
  /** Claim-check send: `true` when the payload went to a blob and the message is a reference. */
  claimCheckStored: "asc.claim_check.stored",
  /** Claim-check sweep: payloads deleted. */
  claimCheckDeleted: "asc.claim_check.deleted",
  /** Outbox relay: the row's PartitionKey. */
  outboxPartition: "asc.outbox.partition_key",
  /** Outbox relay: the row's sequence number in its partition. */
  outboxSequence: "asc.outbox.sequence",
} as const;

/** Span events. */
export const EVENT = {
  /** Optimistic update: a conflict, before the wait (`asc.optimistic.attempts`, `asc.delay_seconds`). */
  conflict: "asc.optimistic.conflict",
  /** Lock acquisition: the lock was seen held by someone else (`asc.lock.previous_holder`). */
  lockBusy: "asc.lock.busy",
} as const;

/** Attributes of events. */
export const EVENT_ATTR = {
  /** The wait before the next attempt, in seconds. */
  delay: "asc.delay_seconds",
} as const;

/** The value of `messaging.system`: Azure Queue Storage (the conventions name no value for it). */
export const MESSAGING_SYSTEM = "azure_queue";

/** Metric instruments. */
export const METRIC = {
  /** Histogram: read-modify-write rounds per optimistic update. */
  updateAttempts: "asc.optimistic.update.attempts",
  /** Histogram: conflicts per optimistic update. */
  updateConflicts: "asc.optimistic.update.conflicts",
  /** Counter: optimistic writes whose outcome no read could settle (OptimisticOutcomeUnknownError). */
  unknownOutcomes: "asc.optimistic.unknown_outcomes",
  /** Histogram: how long acquiring a lock waited, in seconds (attribute `asc.outcome`). */
  lockWait: "asc.lock.wait.duration",
  /** Histogram: how long a lock was held, from acquisition to release or loss, in seconds. */
  lockHold: "asc.lock.hold.duration",
  /** Counter: locks lost while held (attribute `asc.lock.loss_reason`). */
  lockLosses: "asc.lock.losses",
  /** Counter: locks taken over from another holder after waiting for it. */
  lockHandoffs: "asc.lock.handoffs",
  /** Counter: background renewals that failed. */
  renewalFailures: "asc.lock.renewal_failures",
  /** Histogram: how long acquiring a semaphore permit waited, in seconds (attribute `asc.outcome`). */
  semaphoreWait: "asc.semaphore.wait.duration",
  /** Counter: leadership changes of this process (attribute `asc.leader.transition`). */
  leaderChanges: "asc.leader.changes",
  /** Histogram: actions per entity group transaction sent. */
  transactionSize: "asc.tables.transaction.operations",
  /**
   * Counter: messages delivered to the consumer, once each, counted when settled (messaging
   * conventions; attributes `messaging.*`, `asc.outcome`, `error.type` when it failed).
   */
  consumedMessages: "messaging.client.consumed.messages",
  /** Histogram: processing one message, from its reception to its settling, in seconds (messaging conventions). */
  processDuration: "messaging.process.duration",
  /** Counter: receives that found the queue empty. */
  emptyReceives: "asc.queue.empty_receives",
  /** Up-down counter: the tokens a retry budget holds (attribute `asc.retry_budget.name`). */
  budgetTokens: "asc.retry_budget.tokens",
  /** Counter: retries a budget was asked to pay for (attributes `asc.retry_budget.name`, `asc.outcome`: `allowed`, `refused`). */
  budgetRetries: "asc.retry_budget.retries",
  /** Counter: throttling answers that cut a rate limiter's rate (attributes `asc.throttling.limiter`, `asc.throttling.scope`). */
  rateCuts: "asc.throttling.rate_cuts",
  /** Counter: scheduled runs by this instance (attribute `asc.outcome`). */
  scheduleRuns: "asc.schedule.runs",
  /** Histogram: how late after its due time each run started, in seconds. */
  scheduleLag: "asc.schedule.lag",
  /** Counter: ticks this instance recorded as missed (catch-up skipped them). */
  scheduleMissed: "asc.schedule.missed_ticks",
} as const;
