/**
 * Checks made before any request: keys the service would refuse, and actions the SDK or the service
 * would refuse. A batch split into several transactions would otherwise send the good ones and fail
 * on the bad one, half-writing the batch.
 *
 * The rules, from the service's documentation and checked against Azurite:
 * - "Understanding the Table service data model" (learn.microsoft.com/rest/api/storageservices/
 *   understanding-the-table-service-data-model): PartitionKey and RowKey are strings "up to 1 KiB in
 *   size"; strings are UTF-16, so that is 512 code units (Azurite's `validateKey` in
 *   src/table/handlers/TableHandler.ts caps them at `DEFAULT_KEY_MAX_LENGTH = 512`, and a 513-unit key
 *   is refused there); empty strings are allowed, null is not; "/", "\", "#", "?" and the control
 *   characters U+0000-U+001F and U+007F-U+009F are disallowed. Keys travel in request URLs
 *   (`…(PartitionKey='…',RowKey='…')`), so a key must also be well-formed UTF-16: an unpaired
 *   surrogate makes the SDK's `encodeURIComponent` throw before anything is sent. String properties hold up to 64 KiB
 *   (32,768 code units), binary ones 64 KiB; an entity has at most 252 properties of its own.
 * - The SDK serialises only strings, numbers, booleans, bigint, Date, Uint8Array and `{ value, type }`
 *   objects (sdk/tables/data-tables/src/serialization.ts, `serializePrimitive`); anything else throws
 *   while the transaction is being built.
 */
import type { TableEntity, TransactionAction } from "@azure/data-tables";
import { TableActionError, TableKeyError, type TableKeyName, type TableKeyRule } from "./errors.js";

/** The longest key the service stores: 1 KiB of UTF-16, that is 512 code units. */
export const MAX_TABLE_KEY_LENGTH = 512;

// eslint-disable-next-line no-control-regex -- the control characters are the point: the service refuses them
const FORBIDDEN = /[/\\#?\u0000-\u001f\u007f-\u009f]/;
/** A high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
export const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Any surrogate: most keys have none, and this is quicker to rule out than an unpaired one. */
const SURROGATE = /[\uD800-\uDFFF]/;
/**
 * The service's limits on property values and counts, shared with the optimistic table cell:
 * a String or Binary value holds 64 KiB (a string, 32,768 UTF-16 code units); an entity holds 252
 * properties besides PartitionKey, RowKey and Timestamp.
 */
export const ENTITY_LIMITS = { valueInBytes: 65_536, stringUnits: 32_768, ownProperties: 252 } as const;
const MAX_STRING_UNITS = ENTITY_LIMITS.stringUnits;
const MAX_BINARY_BYTES = ENTITY_LIMITS.valueInBytes;
const MAX_OWN_PROPERTIES = ENTITY_LIMITS.ownProperties;
const EDM_TYPES = new Set(["Binary", "Boolean", "DateTime", "Double", "Guid", "Int32", "Int64", "String"]);
const SYSTEM_PROPERTIES = new Set(["partitionKey", "rowKey", "timestamp", "etag"]);

/**
 * Which rule a key breaks, or `undefined` when the service would accept it.
 *
 * @example
 * ```ts
 * import { tableKeyProblem } from "azure-storage-concurrency/tables";
 *
 * tableKeyProblem("orders/2024"); // "forbidden-character"
 * tableKeyProblem("orders_2024"); // undefined
 * ```
 */
export function tableKeyProblem(value: unknown): TableKeyRule | undefined {
  if (value === null || value === undefined) return "missing";
  if (typeof value !== "string") return "not-a-string";
  if (value.length > MAX_TABLE_KEY_LENGTH) return "too-long";
  if (FORBIDDEN.test(value)) return "forbidden-character";
  if (SURROGATE.test(value) && UNPAIRED_SURROGATE.test(value)) return "unpaired-surrogate";
  return undefined;
}

function describeCharacter(ch: string): string {
  const code = ch.charCodeAt(0);
  return code < 0x20 || (code >= 0x7f && code <= 0x9f)
    ? `control character U+${code.toString(16).toUpperCase().padStart(4, "0")}`
    : `"${ch}"`;
}

/**
 * Throws a {@link TableKeyError} naming the key and the rule when the service would refuse `value`
 * as a PartitionKey or RowKey. It is the one key check of the library: every table write path
 * (`writeBatch`, `writeAtomic`, multi-index rows, the optimistic table cell, fenced table writes)
 * runs it before sending anything.
 *
 * @example
 * ```ts
 * import { validateTableKey, compositeKey } from "azure-storage-concurrency/tables";
 *
 * const rowKey = compositeKey(["contoso/emea", "order#42"]); // escapes "/" and friends
 * validateTableKey(rowKey, "rowKey"); // throws TableKeyError if it is still unusable, e.g. too long
 * ```
 */
export function validateTableKey(
  value: unknown,
  keyName: TableKeyName,
  options: { actionIndex?: number } = {},
): asserts value is string {
  const rule = tableKeyProblem(value);
  if (rule === undefined) return;
  const where = options.actionIndex === undefined ? "" : ` (action ${options.actionIndex})`;
  const shown =
    typeof value === "string" ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : String(value);
  let message: string;
  switch (rule) {
    case "missing":
      message = `${keyName}${where} is ${String(value)}: every entity needs a ${keyName} (an empty string is allowed, null is not).`;
      break;
    case "not-a-string":
      message = `${keyName}${where} must be a string, got ${typeof value} ${shown}: pad numbers with padNumber() so that they sort as numbers.`;
      break;
    case "too-long":
      message = `${keyName}${where} is ${(value as string).length} UTF-16 code units long; the service stores at most ${MAX_TABLE_KEY_LENGTH} (1 KiB): shorten it, or hash the long part.`;
      break;
    case "unpaired-surrogate": {
      const found = UNPAIRED_SURROGATE.exec(value as string)!;
      const code = found[0].charCodeAt(0).toString(16).toUpperCase();
      message = `${keyName}${where} holds an unpaired UTF-16 surrogate U+${code} at position ${found.index}: half of a character, which no request URL can carry. Build keys from whole characters (a string cut in the middle of an emoji, say, ends in one).`;
      break;
    }
    default: {
      const ch = (value as string).match(FORBIDDEN)![0];
      message = `${keyName}${where} ${shown} contains ${describeCharacter(ch)}, which the service forbids in keys (/ \\ # ? and control characters): escape it, e.g. with compositeKey().`;
    }
  }
  throw new TableKeyError(message, { keyName, rule, value, actionIndex: options.actionIndex });
}

/**
 * An action as `TableClient.submitTransaction` takes it, also as a readonly tuple (so that
 * `["upsert", entity] as const` works).
 */
export type TableAction = TransactionAction | Readonly<TransactionAction>;

/** An action after the checks: its kind, keys and entity. */
export interface CheckedAction {
  readonly kind: "create" | "update" | "upsert" | "delete";
  readonly partitionKey: string;
  readonly rowKey: string;
  readonly entity: TableEntity;
  readonly action: TransactionAction;
  /** The position in the caller's list. */
  readonly index: number;
}

function valueError(
  name: string,
  index: number,
  rule: "unsupported-value" | "value-too-large",
  message: string,
): TableActionError {
  return new TableActionError(`action ${index}: property \`${name}\` ${message}`, {
    rule,
    actionIndex: index,
    property: name,
  });
}

/** Checks one property's value (no closure per call: it runs for every property of every action). */
function checkPropertyValue(name: string, value: unknown, index: number): void {
  if (value === undefined || value === null || typeof value === "boolean" || typeof value === "bigint") return;
  if (typeof value === "number") return;
  if (typeof value === "string") {
    if (value.length > MAX_STRING_UNITS)
      throw valueError(
        name,
        index,
        "value-too-large",
        `is ${value.length} UTF-16 code units; the service stores at most ${MAX_STRING_UNITS} (64 KiB) in a string property.`,
      );
    return;
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw valueError(name, index, "unsupported-value", "is an invalid Date.");
    return;
  }
  if (value instanceof Uint8Array) {
    if (value.byteLength > MAX_BINARY_BYTES)
      throw valueError(
        name,
        index,
        "value-too-large",
        `is ${value.byteLength} bytes; the service stores at most ${MAX_BINARY_BYTES} (64 KiB) in a binary property.`,
      );
    return;
  }
  if (typeof value === "object") {
    const typed = value as { value?: unknown; type?: unknown };
    if (typed.value !== undefined && typeof typed.type === "string" && EDM_TYPES.has(typed.type)) return;
  }
  throw valueError(
    name,
    index,
    "unsupported-value",
    `has a value the SDK cannot store (${Array.isArray(value) ? "an array" : typeof value}): use a string, number, boolean, bigint, Date, Uint8Array or { value, type } (JSON.stringify objects into a string).`,
  );
}

/**
 * Checks one action as `submitTransaction` takes it (`["create", entity]`, `["update", entity,
 * mode?, options?]`, `["upsert", entity, mode?]`, `["delete", { partitionKey, rowKey }]`): its shape,
 * its keys and, except for deletes, its property values.
 *
 * @throws TableKeyError or TableActionError naming the action's position and the rule.
 */
function checkAction(action: unknown, index: number): CheckedAction {
  if (!Array.isArray(action) || typeof action[1] !== "object" || action[1] === null) {
    throw new TableActionError(
      `action ${index} must be a [kind, entity, ...] tuple, as TableClient.submitTransaction takes.`,
      {
        rule: "not-an-action",
        actionIndex: index,
      },
    );
  }
  const kind = action[0] as unknown;
  if (kind !== "create" && kind !== "update" && kind !== "upsert" && kind !== "delete") {
    throw new TableActionError(
      `action ${index} has kind ${JSON.stringify(kind)}; use "create", "update", "upsert" or "delete".`,
      {
        rule: "unknown-kind",
        actionIndex: index,
      },
    );
  }
  const entity = action[1] as TableEntity;
  validateTableKey(entity.partitionKey, "partitionKey", { actionIndex: index });
  validateTableKey(entity.rowKey, "rowKey", { actionIndex: index });
  if (kind !== "delete") {
    let own = 0;
    for (const name of Object.keys(entity)) {
      if (!SYSTEM_PROPERTIES.has(name)) own += 1;
      if (name !== "partitionKey" && name !== "rowKey") checkPropertyValue(name, entity[name], index);
    }
    if (own > MAX_OWN_PROPERTIES) {
      throw new TableActionError(
        `action ${index} has ${own} properties; an entity holds at most ${MAX_OWN_PROPERTIES} besides its keys and Timestamp.`,
        {
          rule: "too-many-properties",
          actionIndex: index,
        },
      );
    }
  }
  return {
    kind,
    partitionKey: entity.partitionKey,
    rowKey: entity.rowKey,
    entity,
    action: action as TransactionAction,
    index,
  };
}

/**
 * Checks a list of actions; nothing is sent if any is wrong.
 *
 * @throws TypeError when `actions` is not an array; TableKeyError or TableActionError for the first bad action.
 */
export function checkActions(actions: readonly unknown[]): CheckedAction[] {
  if (!Array.isArray(actions)) throw new TypeError("`actions` must be an array of transaction actions.");
  return actions.map((action, index) => checkAction(action, index));
}
