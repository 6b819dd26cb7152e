/**
 * Shorthands for the requests the facts are made of, the set-up every behaviour starts from, and
 * the clean-up after it. Each shorthand stands for exactly the headers it names: nothing is added
 * but the date, the version and the authorisation (`../../support/storage-rest.ts`).
 */
import type { Given, RequestStep } from "./types.js";

/** `x-ms-lease-action` and the headers that go with it. */
export function lease(action: string, more: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { "x-ms-lease-action": action, ...more };
}
/** Acquire with a proposed id; `duration` in seconds, `-1` for infinite. */
export const acquire = (id: string, duration: string) =>
  lease("acquire", { "x-ms-lease-duration": duration, "x-ms-proposed-lease-id": id });
export const renew = (id: string) => lease("renew", { "x-ms-lease-id": id });
export const release = (id: string) => lease("release", { "x-ms-lease-id": id });
export const change = (from: string, to: string) =>
  lease("change", { "x-ms-lease-id": from, "x-ms-proposed-lease-id": to });
/** Break; without a period the service chooses (the rest of a fixed lease, at once for infinite). */
export const breakLease = (periodInSeconds?: string) =>
  lease("break", periodInSeconds === undefined ? {} : { "x-ms-lease-break-period": periodInSeconds });

/** A Lease Blob request on the behaviour's blob `b`. */
export function blobLease(
  headers: Record<string, string>,
  status: number,
  more: Partial<RequestStep> = {},
): RequestStep {
  return { req: "PUT {c}/b?comp=lease", headers, status, ...more };
}
/** A Lease Container request on the behaviour's container. */
export function containerLease(
  headers: Record<string, string>,
  status: number,
  more: Partial<RequestStep> = {},
): RequestStep {
  return { req: "PUT {c}?comp=lease&restype=container", headers, status, ...more };
}

/** Put Blob (a block blob) with these headers. */
export function putBlob(
  path: string,
  headers: Record<string, string>,
  status: number,
  more: Partial<RequestStep> = {},
) {
  return { req: `PUT ${path}`, headers: { "x-ms-blob-type": "BlockBlob", ...headers }, body: "hello", status, ...more };
}

/** Lease headers of Get Blob Properties / Get Container Properties, by state. */
export const LEASED_FIXED = {
  "x-ms-lease-state": "leased",
  "x-ms-lease-status": "locked",
  "x-ms-lease-duration": "fixed",
};
export const LEASED_INFINITE = {
  "x-ms-lease-state": "leased",
  "x-ms-lease-status": "locked",
  "x-ms-lease-duration": "infinite",
};
export const AVAILABLE = {
  "x-ms-lease-state": "available",
  "x-ms-lease-status": "unlocked",
  "x-ms-lease-duration": null,
};
export const BREAKING = { "x-ms-lease-state": "breaking", "x-ms-lease-status": "locked", "x-ms-lease-duration": null };
export const BROKEN = { "x-ms-lease-state": "broken", "x-ms-lease-status": "unlocked", "x-ms-lease-duration": null };
export const EXPIRED = { "x-ms-lease-state": "expired", "x-ms-lease-status": "unlocked", "x-ms-lease-duration": null };

/** A queue message's XML body, as the Queue SDK sends it. */
export const message = (text: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><QueueMessage><MessageText>${text}</MessageText></QueueMessage>`;

/** Headers of entity reads as @azure/data-tables sends them (Query Entities with keys). */
export const ENTITY_READ = { accept: "application/json;odata=minimalmetadata", dataserviceversion: "3.0" };
/** Headers of Insert Entity as @azure/data-tables sends it (no echo of the entity). */
export const ENTITY_INSERT = {
  "content-type": "application/json",
  accept: "application/json;odata=minimalmetadata",
  dataserviceversion: "3.0",
  prefer: "return-no-content",
};
/** Headers of Update/Merge/Delete Entity as @azure/data-tables sends them (Accept: application/json). */
export const ENTITY_WRITE = {
  "content-type": "application/json",
  accept: "application/json",
  dataserviceversion: "3.0",
};
/** An entity's JSON body. */
export const entity = (rowKey: string, value: number, partitionKey = "p") =>
  JSON.stringify({ PartitionKey: partitionKey, RowKey: rowKey, value });
/** The address of an entity of the behaviour's table. */
export const entityPath = (rowKey: string, partitionKey = "p") =>
  `{t}(PartitionKey='${partitionKey}',RowKey='${rowKey}')`;
/** An ETag no entity has (the one the Python SDK's recorded tests use). */
export const OLD_ENTITY_ETAG = `W/"datetime'2012-06-15T22%3A51%3A44.9662825Z'"`;

/** One operation of an entity group transaction, as @azure/data-tables writes it into a changeset. */
export function batchInsert(rowKey: string): string {
  return (
    "POST {tableEndpoint}/{t} HTTP/1.1\r\nContent-Type: application/json;odata=nometadata\r\n" +
    "Accept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\nPrefer: return-no-content\r\n\r\n" +
    entity(rowKey, 1)
  );
}
/** A Replace operation `If-Match` an ETag, in a changeset. */
export function batchReplace(rowKey: string, etag: string): string {
  return (
    `PUT {tableEndpoint}/{t}(PartitionKey='p',RowKey='${rowKey}') HTTP/1.1\r\nContent-Type: application/json\r\n` +
    `Accept: application/json\r\nDataServiceVersion: 3.0\r\nIf-Match: ${etag}\r\n\r\n` +
    entity(rowKey, 2)
  );
}
/** An Entity Group Transaction (`POST $batch`) of these operations, in one changeset. */
export function batch(operations: readonly string[], expected: Partial<RequestStep> & { status: number }): RequestStep {
  const parts = operations
    .map(
      (op) =>
        `--changeset_conf\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n${op}\r\n`,
    )
    .join("");
  return {
    req: "POST $batch",
    headers: {
      "content-type": "multipart/mixed; boundary=batch_conf",
      accept: "application/json",
      dataserviceversion: "3.0",
    },
    body:
      `--batch_conf\r\nContent-Type: multipart/mixed; boundary=changeset_conf\r\n\r\n${parts}` +
      "--changeset_conf--\r\n--batch_conf--\r\n",
    ...expected,
  };
}

const CONTAINER: RequestStep = { service: "blob", req: "PUT {c}?restype=container", status: 201 };
const BLOB: RequestStep = {
  service: "blob",
  ...putBlob("{c}/b", {}, 201),
  capture: { created: "header:etag" },
};
const QUEUE: RequestStep = { service: "queue", req: "PUT {q}", status: 201 };
const SEND: RequestStep = {
  service: "queue",
  req: "POST {q}/messages",
  body: message("hello"),
  status: 201,
  capture: { id: "xml:MessageId", sent: "xml:PopReceipt" },
};
const RECEIVE: RequestStep = {
  service: "queue",
  req: "GET {q}/messages?numofmessages=1&visibilitytimeout=30",
  status: 200,
  capture: { pop: "xml:PopReceipt" },
  bodyHas: ["<MessageId>{id}</MessageId>", "<DequeueCount>1</DequeueCount>"],
};
const TABLE: RequestStep = {
  service: "table",
  req: "POST Tables",
  headers: ENTITY_INSERT,
  body: '{"TableName":"{t}"}',
  status: 204,
};
const ENTITY: RequestStep = {
  service: "table",
  req: "POST {t}",
  headers: ENTITY_INSERT,
  body: entity("r", 1),
  status: 204,
  capture: { etag: "header:etag" },
};

/** What each `given` sends first. */
export const SETUP: Readonly<Record<Given, readonly RequestStep[]>> = {
  nothing: [],
  container: [CONTAINER],
  "container+blob": [CONTAINER, BLOB],
  queue: [QUEUE],
  "queue+message": [QUEUE, SEND],
  "queue+received": [QUEUE, SEND, RECEIVE],
  table: [TABLE],
  "table+entity": [TABLE, ENTITY],
};

/** Deletes what a behaviour created (best effort): a leased container's lease is broken first. */
export const CLEANUP: readonly RequestStep[] = [
  { service: "blob", req: "PUT {c}?comp=lease&restype=container", headers: breakLease("0"), status: 0 },
  { service: "blob", req: "DELETE {c}?restype=container", status: 0 },
  { service: "queue", req: "DELETE {q}", status: 0 },
  { service: "table", req: "DELETE Tables('{t}')", headers: { accept: "application/json" }, status: 0 },
];
