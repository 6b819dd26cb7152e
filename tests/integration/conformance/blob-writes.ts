/**
 * Conditional blob reads and writes: what the optimistic blob cells (Get Blob, Put Blob `If-Match`
 * / `If-None-Match: *`), the lock's record (Set Blob Metadata `If-Match` under the lease), the lock
 * blob's creation and the lock listing send, and the answers they branch on.
 */
import { AVAILABLE, blobLease, acquire, putBlob } from "./steps.js";
import { PAGE, RECORDINGS } from "./sources.js";
import type { Behaviour } from "./types.js";

const recorded: Behaviour[] = [
  {
    name: "Put Blob If-Match an ETag the blob does not have is 412 ConditionNotMet",
    service: "blob",
    features: ["optimistic"],
    source: { recording: RECORDINGS.putBlobIfMatchFail },
    given: "container+blob",
    steps: [putBlob("{c}/b", { "if-match": "0x111111111111111" }, 412, { code: "ConditionNotMet" })],
  },
  {
    name: "Get Blob If-None-Match the current ETag is 304 with x-ms-error-code ConditionNotMet and no body; an unleased blob reads available/unlocked",
    service: "blob",
    features: ["optimistic"],
    source: { recording: RECORDINGS.getBlobIfNoneMatchFail },
    given: "container+blob",
    steps: [
      { req: "HEAD {c}/b", status: 200, answers: { ...AVAILABLE, etag: "{created}" } },
      { req: "GET {c}/b", headers: { "if-none-match": "{created}" }, status: 304, code: "ConditionNotMet" },
    ],
  },
  {
    name: "Get Blob Properties of a missing blob is 404 with x-ms-error-code BlobNotFound (a HEAD: no body)",
    service: "blob",
    features: ["optimistic", "lease"],
    source: { recording: RECORDINGS.blobExistsFalse },
    given: "container",
    steps: [{ req: "HEAD {c}/missing", status: 404, code: "BlobNotFound" }],
  },
];

const pageBacked: Behaviour[] = [
  {
    name: "Get Blob of a missing blob is 404 BlobNotFound; of a blob in a missing container 404 ContainerNotFound",
    service: "blob",
    features: ["optimistic"],
    source: { page: PAGE.blobErrorCodes, says: "BlobNotFound (404), ContainerNotFound (404)" },
    given: "container",
    steps: [
      { req: "GET {c}/missing", status: 404, code: "BlobNotFound" },
      { req: "GET {c}x/b", status: 404, code: "ContainerNotFound" },
    ],
  },
  {
    name: "Put Blob If-Match the current ETag is 201 with a new ETag; If-None-Match * on an existing blob is 409 BlobAlreadyExists; If-Match * on a missing blob is 412 ConditionNotMet",
    service: "blob",
    features: ["optimistic", "lease"],
    source: {
      page: PAGE.conditionalHeaders,
      says: "If-Match: only if the ETag matches; If-None-Match *: only if the blob does not exist (else 409 BlobAlreadyExists, per Put Blob); the Blob service follows HTTP/1.1 conditional semantics (If-Match * fails without a current representation)",
    },
    given: "container+blob",
    steps: [
      putBlob("{c}/b", { "if-match": "{created}" }, 201, { answers: { etag: "!{created}" } }),
      putBlob("{c}/b", { "if-none-match": "*" }, 409, { code: "BlobAlreadyExists" }),
      putBlob("{c}/missing", { "if-match": "*" }, 412, { code: "ConditionNotMet" }),
      putBlob("{c}/new", { "if-none-match": "*" }, 201),
    ],
  },
  {
    name: "Set Blob Metadata under the lease If-Match the current ETag is 200 with a new ETag; If-Match the old ETag is 412 ConditionNotMet; leasing did not change the ETag",
    service: "blob",
    features: ["lease", "election", "table-lock"],
    source: {
      page: PAGE.conditionalHeaders,
      says: "Set Blob Metadata supports If-Match; a condition not met is 412 ConditionNotMet",
    },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      {
        req: "PUT {c}/b?comp=metadata",
        headers: { "x-ms-lease-id": "{A}", "if-match": "{created}", "x-ms-meta-fencingtoken": "1" },
        status: 200,
        answers: { etag: "!{created}" },
      },
      {
        req: "PUT {c}/b?comp=metadata",
        headers: { "x-ms-lease-id": "{A}", "if-match": "{created}", "x-ms-meta-fencingtoken": "2" },
        status: 412,
        code: "ConditionNotMet",
      },
      { req: "HEAD {c}/b", status: 200, answers: { "x-ms-meta-fencingtoken": "1" } },
    ],
  },
  {
    name: "List Blobs with include=metadata gives each blob's lease state and metadata",
    service: "blob",
    features: ["lease"],
    source: {
      page: PAGE.listBlobs,
      says: "include=metadata returns each blob's metadata; Properties carry LeaseStatus and LeaseState",
    },
    given: "container+blob",
    steps: [
      { req: "PUT {c}/b?comp=metadata", headers: { "x-ms-meta-holder": "worker1" }, status: 200 },
      blobLease(acquire("{A}", "15"), 201),
      {
        req: "GET {c}?restype=container&comp=list&include=metadata",
        status: 200,
        bodyHas: ["<Name>b</Name>", "<LeaseState>leased</LeaseState>", "<holder>worker1</holder>"],
      },
    ],
  },
  {
    name: "Get Container Properties of a missing container is 404 ContainerNotFound",
    service: "blob",
    features: ["optimistic"],
    source: { page: PAGE.blobErrorCodes, says: "ContainerNotFound (404)" },
    given: "nothing",
    steps: [{ req: "GET {c}?restype=container", status: 404, code: "ContainerNotFound" }],
  },
];

/** Conditional blob behaviours. */
export const BLOB_WRITES: readonly Behaviour[] = [...recorded, ...pageBacked];
