/**
 * One fenced table write: applied at most once, never over an entity written under a later
 * acquisition of the lock, and never reported as failed when it was applied.
 *
 * The fence. Every write is made conditional on the version it was checked against: the entity is
 * read, its fencing token compared with the holder's (a higher one means a later holder wrote:
 * `FencedWriteRejectedError`), and the write sent `If-Match` that version's ETag (an insert when
 * there is none). With the caller's ETag the write is made over exactly the version the caller read,
 * so that version is the one checked: if it is no longer the stored one, the caller's read is stale
 * and the write cannot apply (an ordinary 412 conflict, found without sending it). Whatever the
 * caller passes, nothing is written over a higher token.
 *
 * Lost answers. Each write stamps a write id of its own on the entity (`lockWriteId`). When a send
 * gets no definite answer (a network failure, a 5xx, the client-side time limit), or an answer
 * that a resend by the SDK would get after its first try was applied (412, 409, 404), the entity is
 * read back:
 * - it carries this write id (a delete: it is gone): the write was applied; it resolves;
 * - it is still the version the write was conditioned on: not applied yet; the same write (same
 *   condition, same id) is sent again. Only one of the copies can apply, because each is
 *   conditional on a version that the first to apply replaces;
 * - it moved on without this write: checked again like a fresh write (a higher token refuses it;
 *   a stale caller ETag is a 412; without a caller ETag, another try on the new version).
 * Only when the read-back fails too (three reads), or the write must stop (the lock lost, the tries used up)
 * while the entity is unchanged and an unanswered send could still reach the service, is the
 * outcome unknown: `FencedWriteOutcomeUnknownError`, carrying the write id to look for.
 *
 * One assumption, the lock's own: while this holder holds the lock, nobody else writes the entity
 * except through the lock (a later holder, with a higher token). Concurrent fenced writes to one
 * entity under the same handle are not told apart from each other: make them one after the other.
 */
import { randomBytes } from "node:crypto";
import type { TableClient, TableEntity, TableEntityResult, UpdateMode } from "@azure/data-tables";
import { StorageRequestError, statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { classifyError } from "../retry/index.js";
import { validateTableKey } from "../tables/index.js";
import { FencedWriteOutcomeUnknownError, FencedWriteRejectedError } from "./errors.js";
import { describeFailure } from "./wait-failures.js";

/** What every fenced write of one guarded table shares. */
export interface FenceContext {
  readonly table: TableClient;
  readonly fencingToken: number;
  readonly fencingProperty: string;
  readonly writeIdProperty: string;
  readonly requestTimeoutInMs: number;
  /** Throws unless the lock is held with enough time left and the keys are in the lock's scope. */
  readonly check: (partitionKey: string, rowKey: string) => void;
}

/** One write: what it does, to which entity. */
interface FencedWrite {
  readonly kind: "create" | "update" | "upsert" | "delete";
  readonly partitionKey: string;
  readonly rowKey: string;
  /** The entity to write (not for a delete). */
  readonly entity?: TableEntity<object>;
  /** Merge or Replace, for updates. */
  readonly mode?: UpdateMode;
  /** The caller's ETag (`update` and `delete` only); `"*"` counts as none. */
  readonly etag?: string;
  readonly abortSignal?: AbortSignal;
}

/** How many sends one write makes at most. */
const MAX_SENDS = 5;
/** How many reads a read-back after an unanswered send makes at most: one failed read should not leave it open. */
const READ_BACK_TRIES = 3;

type Version =
  | { readonly exists: false; readonly error: unknown }
  | { readonly exists: true; readonly etag: string; readonly token: number; readonly writeId: unknown };

/** What a failed send left behind: the error, and whether that send may still reach the service. */
interface Unanswered {
  readonly error: unknown;
  readonly mayStillLand: boolean;
}

/** Runs one fenced write; see the module's description. */
export async function fencedWrite(ctx: FenceContext, write: FencedWrite): Promise<void> {
  validateTableKey(write.partitionKey, "partitionKey");
  validateTableKey(write.rowKey, "rowKey");
  ctx.check(write.partitionKey, write.rowKey);
  const writeId = randomBytes(12).toString("base64url");
  const callerEtag = write.etag === "*" ? undefined : write.etag;
  const where = `entity '${write.partitionKey}/${write.rowKey}' of table '${ctx.table.tableName}'`;
  const stamped = write.entity && {
    ...write.entity,
    [ctx.fencingProperty]: ctx.fencingToken,
    [ctx.writeIdProperty]: writeId,
  };
  const limited = <T>(operation: string, call: (signal: AbortSignal) => Promise<T>) =>
    withTimeLimit(`${operation} ${where}`, ctx.requestTimeoutInMs, write.abortSignal, call);
  const read = async (): Promise<Version> => {
    try {
      const entity = await limited("read", (abortSignal) =>
        ctx.table.getEntity<Record<string, unknown>>(write.partitionKey, write.rowKey, { abortSignal }),
      );
      return {
        exists: true,
        etag: entity.etag,
        token: tokenOf(entity, ctx.fencingProperty),
        writeId: entity[ctx.writeIdProperty],
      };
    } catch (error) {
      if (statusOf(error) === 404) return { exists: false, error };
      throw error;
    }
  };
  const send = (etag: string | undefined) =>
    limited(write.kind === "delete" ? "delete" : "write", (abortSignal): Promise<unknown> => {
      if (write.kind === "delete")
        return ctx.table.deleteEntity(write.partitionKey, write.rowKey, { etag, abortSignal });
      if (etag === undefined) return ctx.table.createEntity(stamped!, { abortSignal });
      return ctx.table.updateEntity(stamped!, write.mode ?? "Merge", { etag, abortSignal });
    });

  let base: Version | undefined = write.kind === "create" ? undefined : await read();
  let unanswered: Unanswered | undefined;
  for (let sends = 0; ; sends++) {
    // What to send, judged on the latest version known; throws when nothing may be sent.
    const next = plan(ctx, write, base, callerEtag, unanswered, where);
    if (next === "done") return;
    if (sends >= MAX_SENDS) throw giveUp(unanswered!, writeId, where, "it was tried " + MAX_SENDS + " times");
    try {
      ctx.check(write.partitionKey, write.rowKey);
    } catch (error) {
      if (unanswered?.mayStillLand) throw giveUp(unanswered, writeId, where, "the lock may no longer be used", error);
      throw error;
    }
    try {
      await send(next.etag);
      return;
    } catch (error) {
      if (write.abortSignal?.aborted) throw error;
      const status = statusOf(error);
      const conflict = status === 404 || status === 409 || status === 412;
      if (!conflict && !classifyError(error).transient) throw error;
      unanswered = { error, mayStillLand: !conflict && mayStillLand(error) };
    }
    base = await readBack(read, write.abortSignal, (error) => {
      return new FencedWriteOutcomeUnknownError(
        `The fenced write to ${where} got no answer (${describeFailure(unanswered!.error)}) and reading it back ` +
          `failed too (${describeFailure(error)}): it may or may not have been applied. ` +
          `Look for write id ${writeId}.`,
        { writeId, cause: error },
      );
    });
    const applied = write.kind === "delete" ? !base.exists : base.exists && base.writeId === writeId;
    if (applied) return;
  }
}

/**
 * Reads the entity back after an unanswered send: reads are safe to repeat, so a transient failure
 * is tried again (at most {@link READ_BACK_TRIES} reads, each within the time limit); when none
 * answers, the outcome is unknown (`unknown(error)` is thrown).
 */
async function readBack(
  read: () => Promise<Version>,
  abortSignal: AbortSignal | undefined,
  unknown: (error: unknown) => Error,
): Promise<Version> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (abortSignal?.aborted) throw error;
      if (attempt >= READ_BACK_TRIES || !classifyError(error).transient) throw unknown(error);
    }
  }
}

/**
 * The ETag to send the write with (`undefined`: an insert), or `"done"`; throws when the write
 * must not be sent: refused by the fence, the entity missing, the caller's ETag stale.
 */
function plan(
  ctx: FenceContext,
  write: FencedWrite,
  base: Version | undefined,
  callerEtag: string | undefined,
  unanswered: Unanswered | undefined,
  where: string,
): { readonly etag: string | undefined } | "done" {
  if (base === undefined) return { etag: undefined }; // a create, not read: the insert itself checks
  if (!base.exists) {
    if (write.kind === "create" || write.kind === "upsert") return { etag: undefined };
    if (write.kind === "delete" && unanswered) return "done"; // gone: the delete's aim holds
    throw base.error; // the service's 404: nothing to update or delete
  }
  if (base.token > ctx.fencingToken) {
    throw new FencedWriteRejectedError(
      `Refused to write ${where}: it carries fencing token ${base.token}, written under a later acquisition of the ` +
        `lock than this holder's (${ctx.fencingToken}). This holder lost the lock; stop and let the new holder work.` +
        (unanswered ? " An earlier try of this write got no answer: it may have been applied before that." : ""),
      {
        fencingToken: ctx.fencingToken,
        currentToken: base.token,
        mayHaveBeenApplied: unanswered !== undefined,
        cause: unanswered?.error,
      },
    );
  }
  if (write.kind === "create") {
    if (statusOf(unanswered?.error) === 409) throw unanswered!.error;
    throw conflictError(409, "EntityAlreadyExists", `Could not create ${where}: it exists.`, unanswered?.error);
  }
  if (callerEtag !== undefined && base.etag !== callerEtag) {
    if (statusOf(unanswered?.error) === 412) throw unanswered!.error;
    throw conflictError(
      412,
      "UpdateConditionNotSatisfied",
      `Could not ${write.kind} ${where}: it changed since the read whose ETag was passed (an ordinary optimistic ` +
        "conflict): read it again and redo the change.",
      unanswered?.error,
    );
  }
  return { etag: write.kind === "upsert" ? base.etag : (callerEtag ?? base.etag) };
}

/** A definite conflict found without a request: the service's status and code, as a library error. */
function conflictError(statusCode: number, serviceCode: string, message: string, cause: unknown): StorageRequestError {
  return new StorageRequestError(message, {
    code: "StorageRequestFailed",
    statusCode,
    serviceCode,
    transient: false,
    cause,
  });
}

/** The write stops with a send unanswered: unknown if that send could still land, else its failure. */
function giveUp(unanswered: Unanswered, writeId: string, where: string, why: string, cause?: unknown): unknown {
  if (!unanswered.mayStillLand) return cause ?? unanswered.error;
  return new FencedWriteOutcomeUnknownError(
    `The fenced write to ${where} got no answer (${describeFailure(unanswered.error)}); the entity is unchanged but ` +
      `that request may still reach the service, and ${why}: it may or may not be applied. Look for write id ${writeId}.`,
    { writeId, cause: cause ?? unanswered.error },
  );
}

/**
 * Whether a send that failed this way may still be applied later: no answer at all, or a 500/504,
 * which the service may finish after answering. A 503 or 429 was not processed.
 */
function mayStillLand(error: unknown): boolean {
  const { kind } = classifyError(error);
  return kind === "network" || kind === "timeout" || kind === "server";
}

/** The fencing token an entity carries (0 when none). */
function tokenOf(entity: TableEntityResult<Record<string, unknown>>, fencingProperty: string): number {
  const value = entity[fencingProperty];
  const parsed =
    typeof value === "object" && value !== null ? Number((value as { value?: unknown }).value) : Number(value ?? 0);
  return Number.isFinite(parsed) ? parsed : 0;
}
