/**
 * How big an entity group transaction's request body will be, estimated from above, so that the
 * library splits (or refuses) before the service answers 413 RequestBodyTooLarge. Azurite checks
 * the 4 MiB limit too (`BODY_SIZE_MAX` in src/table/utils/constants.ts), but the library must not
 * rely on any service to enforce it.
 *
 * The body is what `@azure/data-tables` builds in `submitTransaction` (read in
 * github.com/Azure/azure-sdk-for-js, sdk/tables/data-tables/src/TableTransaction.ts,
 * TablePolicies.ts `getNextSubrequestBodyPart`, utils/transactionHelpers.ts): a multipart/mixed batch
 * holding one changeset; each action is a part with its boundary line, two part headers, the request
 * line with the full entity URL (`<table url>(PartitionKey='…',RowKey='…')`, keys quote-doubled
 * and percent-encoded), up to five headers (Content-Type, Accept, DataServiceVersion, Prefer or
 * If-Match), a blank line and the entity as JSON with `@odata.type` annotations for bigint, Date,
 * Uint8Array and `{ value, type }` values, plus the transaction's write id (write-id.ts). The
 * estimate computes the JSON and the URL exactly and allows generous fixed room for the boundaries
 * and headers; the tests compare it with the bodies the SDK really sends.
 */
import type { TableEntity } from "@azure/data-tables";
import type { CheckedAction } from "./validation.js";
import { WRITE_ID_BYTES } from "./write-id.js";

/** The service's limits on one entity group transaction ("Performing entity group transactions"). */
export const TRANSACTION_LIMITS: {
  /** Actions (entity operations) in one transaction: at most 100. */
  readonly maxOperations: 100;
  /** Bytes of the transaction's request body: at most 4 MiB (4,194,304 bytes). */
  readonly maxPayloadBytes: 4_194_304;
} = Object.freeze({
  maxOperations: 100,
  maxPayloadBytes: 4_194_304,
});

/** Room for one part's boundary line, part headers, request line words and request headers (about 200 bytes are used). */
const PART_OVERHEAD_BYTES = 512;
/** Room for the batch and changeset boundaries around the parts (about 250 bytes are used). */
const TRANSACTION_OVERHEAD_BYTES = 512;

const NAME_MAP: Readonly<Record<string, string>> = {
  partitionKey: "PartitionKey",
  rowKey: "RowKey",
  etag: "odata.etag",
  timestamp: "Timestamp",
};

/**
 * Printable ASCII that JSON leaves as it is (no `"` nor `\`), and the URL-safe characters a key
 * keeps in the sub-request URL: the common case, measured by its length alone. Planning runs over
 * every action before anything is sent, so its cost is paid on every batch (issue 27: computing
 * each string's JSON and UTF-8 bytes was most of what `writeBatch` cost over raw transactions).
 */
const PLAIN_JSON = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const URL_SAFE = /^[A-Za-z0-9\-_.!~*()]*$/;

function jsonBytes(value: string): number {
  if (PLAIN_JSON.test(value)) return value.length + 2; // the quotes
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/** Bytes of a key in the sub-request URL: quotes doubled, non-URL-safe characters percent-encoded. */
function urlKeyBytes(key: string): number {
  if (URL_SAFE.test(key)) return key.length;
  let bytes = 0;
  for (const ch of key) {
    if (/[A-Za-z0-9\-_.!~*()]/.test(ch)) bytes += 1;
    else if (ch === "'") bytes += 2;
    else bytes += 3 * Buffer.byteLength(ch, "utf8");
  }
  return bytes;
}

function annotationBytes(name: string, type: string): number {
  return 2 + jsonBytes(`${name}@odata.type`) + jsonBytes(type); // `,"name@odata.type":"Edm.X"`
}

function valueBytes(name: string, value: unknown): number {
  if (value === undefined) return -1; // JSON.stringify leaves it out
  if (typeof value === "string") return jsonBytes(value);
  if (typeof value === "number" || typeof value === "boolean" || value === null) return JSON.stringify(value).length;
  if (typeof value === "bigint") return value.toString().length + 2 + annotationBytes(name, "Edm.Int64");
  if (value instanceof Date) return 30 + annotationBytes(name, "Edm.DateTime");
  if (value instanceof Uint8Array) return Math.ceil(value.byteLength / 3) * 4 + 2 + annotationBytes(name, "Edm.Binary");
  const typed = value as { value?: unknown; type?: unknown };
  const inner =
    typeof typed.value === "string"
      ? jsonBytes(typed.value)
      : Buffer.byteLength(JSON.stringify(String(typed.value)), "utf8");
  return inner + annotationBytes(name, `Edm.${String(typed.type)}`);
}

/** Bytes of the entity as the JSON body the SDK sends. */
function entityJsonBytes(entity: TableEntity): number {
  let bytes = 2; // {}
  let first = true;
  for (const name of Object.keys(entity)) {
    const valueSize = valueBytes(name, entity[name]);
    if (valueSize < 0) continue;
    bytes += (first ? 0 : 1) + jsonBytes(NAME_MAP[name] ?? name) + 1 + valueSize;
    first = false;
  }
  return bytes;
}

/**
 * An upper estimate of one action's part of the transaction body.
 * @param tableUrlBytes - bytes of the table's URL, `client.url` + "/" + `client.tableName`.
 */
export function estimateActionBytes(action: CheckedAction, tableUrlBytes: number): number {
  let bytes = PART_OVERHEAD_BYTES + tableUrlBytes;
  if (action.kind !== "create") {
    bytes += "(PartitionKey='',RowKey='')".length + urlKeyBytes(action.partitionKey) + urlKeyBytes(action.rowKey);
  }
  if (action.kind === "update") {
    const options = action.action[3] as { etag?: unknown } | undefined;
    bytes += typeof options?.etag === "string" ? Buffer.byteLength(options.etag, "utf8") + 12 : 14;
  }
  if (action.kind !== "delete") bytes += entityJsonBytes(action.entity) + WRITE_ID_BYTES;
  return bytes;
}

/** Bytes of the table URL the SDK puts in every sub-request, from a client's `url` and `tableName`. */
export function tableUrlBytes(client: { readonly url: string; readonly tableName: string }): number {
  return Buffer.byteLength(client.url, "utf8") + 1 + Buffer.byteLength(client.tableName, "utf8") + 64; // + room for a query string
}

/** An upper estimate of a whole transaction's body, given its actions' estimates. */
export function transactionBytes(actionBytes: readonly number[]): number {
  return actionBytes.reduce((sum, bytes) => sum + bytes, TRANSACTION_OVERHEAD_BYTES);
}
