/**
 * The write id of `writeBatch` and `writeAtomic` transactions: every entity a transaction creates,
 * updates or upserts carries the property `_writeId`, one random id per transaction (the same on
 * each of its entities, and on each resend of it). When the transaction's outcome is in doubt, one
 * entity is read back (see read-back.ts): holding the id, the transaction was applied (a transaction
 * applies whole or not at all); holding anything else, it was not.
 *
 * These entities keep no history (the library does not read them before writing), so when the
 * entity read back holds another write, storage cannot say whether that write was made on top of
 * this transaction. After an attempt the library saw get no answer, that is "unknown". After a
 * 404/409/412 with no such attempt seen, it is taken as a refusal: the one assumption, that no
 * other writer changed the entity in the moments between a lost answer and the SDK's own resend
 * (which the library cannot see). With `SDK_SINGLE_ATTEMPT` and the library's `retry` option the
 * library sees every attempt and needs no assumption. Deletes carry no id (they have no body); a
 * transaction of deletes only can be judged only by its entities being gone, which does not say
 * who removed them.
 */
import type { TableEntity, TransactionAction } from "@azure/data-tables";
import { ENTITY_LIMITS } from "./validation.js";
import { readEntityBack, type EntityReader, type ReadBack, type ReadBackVerdict } from "./read-back.js";

/**
 * The property in which {@link writeBatch} and {@link writeAtomic} store each transaction's write id
 * on the entities it writes: 16 URL-safe characters, one random id per transaction.
 *
 * @example
 * ```ts
 * import { WRITE_ID_PROPERTY } from "azure-storage-concurrency/tables";
 *
 * // Leave the write id out of what the application sees.
 * const entity = await table.getEntity<Record<string, unknown>>("p", "r");
 * const { [WRITE_ID_PROPERTY]: _writeId, etag, timestamp, ...data } = entity;
 * ```
 */
export const WRITE_ID_PROPERTY = "_writeId";

/** Bytes the write id adds to an action's body: `,"_writeId":"<16 characters>"`. */
export const WRITE_ID_BYTES = 31;

const SYSTEM_PROPERTIES = new Set(["partitionKey", "rowKey", "timestamp", "etag"]);

/** True when `entity` has room for the write id among the 252 properties an entity may hold. */
function hasRoom(entity: TableEntity): boolean {
  let own = 0;
  for (const name of Object.keys(entity)) if (!SYSTEM_PROPERTIES.has(name) && name !== WRITE_ID_PROPERTY) own += 1;
  return own < ENTITY_LIMITS.ownProperties;
}

/**
 * `actions` with `writeId` on every entity they write (a copy; the caller's objects are not
 * changed). An entity that already holds 252 properties of its own is sent as it is.
 */
export function stampActions(actions: readonly TransactionAction[], writeId: string): TransactionAction[] {
  return actions.map((action) => {
    if (action[0] === "delete" || !hasRoom(action[1])) return action;
    const stamped = { ...action[1], [WRITE_ID_PROPERTY]: writeId };
    return [action[0], stamped, ...action.slice(2)] as unknown as TransactionAction;
  });
}

const isStamped = (action: TransactionAction, writeId: string) =>
  action[0] !== "delete" && (action[1] as Record<string, unknown>)[WRITE_ID_PROPERTY] === writeId;

/** The ETag an update action is checked against, if any. */
function ifMatchOf(action: TransactionAction): string | undefined {
  if (action[0] !== "update") return undefined;
  const etag = (action[3] as { etag?: unknown } | undefined)?.etag;
  return typeof etag === "string" && etag !== "*" ? etag : undefined;
}

/**
 * The read-back of a transaction of `actions` stamped with `writeId` (by {@link stampActions}).
 * It reads one stamped entity, the one the service blamed if it is stamped: holding the id, the
 * transaction was applied, and the other stamped entities are read for their ETags; otherwise, the
 * witness's own condition says whether a copy still on its way could apply.
 */
export function stampedReadBack(
  client: EntityReader,
  partitionKey: string,
  actions: readonly TransactionAction[],
  writeId: string,
): ReadBack {
  return async (abortSignal, { failedPosition, inDoubt }): Promise<ReadBackVerdict> => {
    const stamped = actions.flatMap((action, i) => (isStamped(action, writeId) ? [i] : []));
    if (stamped.length === 0) return deletesReadBack(client, partitionKey, actions, abortSignal);
    const witness = failedPosition !== undefined && stamped.includes(failedPosition) ? failedPosition : stamped[0]!;
    const read = (i: number) => readEntityBack(client, partitionKey, actions[i]![1].rowKey, abortSignal);
    const found = await read(witness);
    if (found?.[WRITE_ID_PROPERTY] === writeId) {
      const etags = await Promise.all(
        actions.map(async (action, i) => {
          if (i === witness) return found.etag;
          if (!isStamped(action, writeId)) return undefined;
          const entity = await read(i);
          return entity?.[WRITE_ID_PROPERTY] === writeId ? entity.etag : undefined;
        }),
      );
      return { kind: "applied", etags };
    }
    const action = actions[witness]!;
    const ifMatch = ifMatchOf(action);
    // The key is taken, or the ETag moved on: this transaction can never apply now. Whether it did
    // before, and another write replaced it, only a history could tell, and these entities keep none.
    const moved = (action[0] === "create" && found !== undefined) || (ifMatch !== undefined && found?.etag !== ifMatch);
    if (!moved) return { kind: "absent" };
    if (!inDoubt) return { kind: "refused" }; // no attempt seen in doubt: a refusal (see the assumption above)
    return {
      kind: "unknown",
      reason:
        "after an attempt whose answer was lost, another write changed its entity, and nothing in storage says whether that write was made on top of this transaction",
    };
  };
}

/** A transaction of deletes only: if any entity is still there, it was not applied; if all are gone, no read can say by whom. */
async function deletesReadBack(
  client: EntityReader,
  partitionKey: string,
  actions: readonly TransactionAction[],
  abortSignal: AbortSignal | undefined,
): Promise<ReadBackVerdict> {
  for (const action of actions) {
    if (await readEntityBack(client, partitionKey, action[1].rowKey, abortSignal)) return { kind: "absent" };
  }
  return {
    kind: "unknown",
    reason:
      "every entity it deletes is gone, but deletes carry no write id: this transaction or another writer removed them",
  };
}
