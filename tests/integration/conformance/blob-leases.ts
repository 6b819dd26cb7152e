/**
 * Blob and container leases: what the lease lock engine, leader election, the table lock's lock
 * blob and the container-metadata cell send, and the answers they branch on (see
 * docs/service-conformance.md for where the library reads each one). The recorded ones are the
 * facts read by hand from the SDKs' recordings (`./sources.ts`); the page-backed ones follow the
 * outcome table of "Lease Blob" and the error code tables.
 */
import {
  acquire,
  AVAILABLE,
  blobLease,
  breakLease,
  BREAKING,
  BROKEN,
  change,
  containerLease,
  EXPIRED,
  LEASED_FIXED,
  LEASED_INFINITE,
  putBlob,
  release,
  renew,
} from "./steps.js";
import { PAGE, RECORDINGS } from "./sources.js";
import type { Behaviour, Feature } from "./types.js";

const LOCKS: readonly Feature[] = ["lease", "election", "table-lock"];
/** Lease ids are sanitised in some recordings: `{A}` stands for the proposed id of the recorded test. */
const recorded: Behaviour[] = [
  {
    name: "Lease Blob: a 15 s acquire with a proposed id is 201 with that id; the blob reads leased/locked/fixed and keeps its ETag; a break with a period is 202 with x-ms-lease-time, breaking, then broken",
    service: "blob",
    features: LOCKS,
    source: { recording: RECORDINGS.blobBreakLease },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201, { answers: { "x-ms-lease-id": "{A}", etag: "{created}" } }),
      { req: "HEAD {c}/b", status: 200, answers: { ...LEASED_FIXED, etag: "{created}" } },
      blobLease(breakLease("5"), 202, { answers: { "x-ms-lease-time": "5", etag: "{created}" } }),
      { req: "HEAD {c}/b", status: 200, answers: BREAKING },
      { req: "HEAD {c}/b", waitMs: 6_000, status: 200, answers: BROKEN },
    ],
  },
  {
    name: "Lease Blob: acquiring a leased blob with another proposed id is 409 LeaseAlreadyPresent",
    service: "blob",
    features: LOCKS,
    source: { recording: RECORDINGS.blobAcquireTwiceFails },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "-1"), 201, { answers: { "x-ms-lease-id": "{A}", etag: "{created}" } }),
      blobLease(acquire("{B}", "-1"), 409, { code: "LeaseAlreadyPresent" }),
    ],
  },
  {
    name: "Lease Blob: a 15 s lease nobody took after it expired reads expired/unlocked and is renewed (200); renew and release answer 200",
    service: "blob",
    features: LOCKS,
    source: { recording: RECORDINGS.blobRenewLease },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      { req: "HEAD {c}/b", status: 200, answers: LEASED_FIXED },
      { req: "HEAD {c}/b", waitMs: 16_000, status: 200, answers: EXPIRED },
      blobLease(renew("{A}"), 200, { answers: { "x-ms-lease-id": "{A}" } }),
      { req: "HEAD {c}/b", status: 200, answers: LEASED_FIXED },
      blobLease(release("{A}"), 200),
      { req: "HEAD {c}/b", status: 200, answers: AVAILABLE },
    ],
  },
  {
    // The recorded requests also carried `If-None-Match: *` (and were granted all the same); left
    // out here: the library never sends it with a lease id.
    name: "Put Blob with the id of a 15 s lease that expired is 412 LeaseLost",
    service: "blob",
    features: ["optimistic", "lease"],
    source: { recording: RECORDINGS.blobLeaseWithDuration },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      putBlob("{c}/b", { "x-ms-lease-id": "{A}" }, 201),
      putBlob("{c}/b", { "x-ms-lease-id": "{A}" }, 412, {
        waitMs: 16_000,
        code: "LeaseLost",
        azurite: {
          code: "LeaseNotPresentWithBlobOperation",
          why: "the library reads any 412 whose code starts with `Lease` as the lease being gone (isWriteConflict), never the code itself",
        },
      }),
    ],
  },
  {
    name: "Lease Container: acquiring again with the id that holds the lease is granted (201), also with another duration; leasing does not change the ETag",
    service: "blob",
    features: ["optimistic", "lease"],
    source: { recording: RECORDINGS.containerLeaseTwice },
    given: "container",
    steps: [
      { req: "GET {c}?restype=container", status: 200, capture: { cetag: "header:etag" } },
      containerLease(acquire("{A}", "15"), 201, { answers: { "x-ms-lease-id": "{A}", etag: "{cetag}" } }),
      containerLease(acquire("{A}", "-1"), 201, { answers: { "x-ms-lease-id": "{A}", etag: "{cetag}" } }),
    ],
  },
  {
    name: "Lease Container: another id is refused (409 LeaseAlreadyPresent) until a 15 s lease expires, then granted (201); creating an existing container is 409 ContainerAlreadyExists",
    service: "blob",
    features: ["optimistic", "lease"],
    source: { recording: RECORDINGS.containerLeaseWithDuration },
    given: "container",
    steps: [
      containerLease(acquire("{A}", "15"), 201),
      containerLease(acquire("{B}", "-1"), 409, { code: "LeaseAlreadyPresent" }),
      containerLease(acquire("{B}", "-1"), 201, { waitMs: 16_000, answers: { "x-ms-lease-id": "{B}" } }),
      { req: "PUT {c}?restype=container", status: 409, code: "ContainerAlreadyExists" },
    ],
  },
  {
    name: "Lease Container: release is 200; a break after it is 409 LeaseNotPresentWithLeaseOperation",
    service: "blob",
    features: ["lease"],
    source: { recording: RECORDINGS.containerBreakReleasedLeaseFails },
    given: "container",
    steps: [
      containerLease(acquire("{A}", "-1"), 201),
      containerLease(release("{A}"), 200),
      containerLease(breakLease(), 409, { code: "LeaseNotPresentWithLeaseOperation" }),
    ],
  },
  {
    name: "Lease Container: Get Container Properties reads leased/locked/fixed with the ETag unchanged; change and release are 200",
    service: "blob",
    features: ["optimistic", "lease"],
    source: { recording: RECORDINGS.containerChangeLease },
    given: "container",
    steps: [
      { req: "GET {c}?restype=container", status: 200, capture: { cetag: "header:etag" }, answers: AVAILABLE },
      containerLease(acquire("{A}", "15"), 201),
      { req: "GET {c}?restype=container", status: 200, answers: { ...LEASED_FIXED, etag: "{cetag}" } },
      containerLease(change("{A}", "{B}"), 200),
      { req: "GET {c}?restype=container", status: 200, answers: { ...LEASED_FIXED, etag: "{cetag}" } },
      containerLease(release("{B}"), 200),
    ],
  },
];

const OUTCOMES =
  "outcomes of lease operations by lease state (the page's table), with the error codes of Blob service error codes";
const pageBacked: Behaviour[] = [
  {
    name: "Lease Blob: renew, release and change with an id that does not hold the lease are 409 LeaseIdMismatchWithLeaseOperation",
    service: "blob",
    features: LOCKS,
    source: { page: PAGE.leaseBlob, says: OUTCOMES },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      blobLease(renew("{B}"), 409, { code: "LeaseIdMismatchWithLeaseOperation" }),
      blobLease(release("{B}"), 409, { code: "LeaseIdMismatchWithLeaseOperation" }),
      blobLease(change("{B}", "{C}"), 409, { code: "LeaseIdMismatchWithLeaseOperation" }),
      { req: "HEAD {c}/b", status: 200, answers: LEASED_FIXED },
    ],
  },
  {
    name: "Lease Blob: change to the id that already holds the lease is granted (a resent change)",
    service: "blob",
    features: LOCKS,
    source: {
      page: PAGE.leaseBlob,
      says: "Change (B) to (A) on a lease held by A: leased (A), the change is idempotent",
    },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      blobLease(change("{B}", "{A}"), 200, { answers: { "x-ms-lease-id": "{A}" } }),
    ],
  },
  {
    name: "Lease Blob: a break with period 0 is 202 with x-ms-lease-time 0 and the blob reads broken; renew is then 409 LeaseIsBrokenAndCannotBeRenewed and another id acquires it (201)",
    service: "blob",
    features: LOCKS,
    source: { page: PAGE.leaseBlob, says: OUTCOMES },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "15"), 201),
      blobLease(breakLease("0"), 202, { answers: { "x-ms-lease-time": "0" } }),
      { req: "HEAD {c}/b", status: 200, answers: BROKEN },
      blobLease(renew("{A}"), 409, { code: "LeaseIsBrokenAndCannotBeRenewed" }),
      blobLease(acquire("{B}", "15"), 201, { answers: { "x-ms-lease-id": "{B}" } }),
    ],
  },
  {
    name: "Lease Blob: releasing a broken lease with its id is 200 and leaves the blob available",
    service: "blob",
    features: LOCKS,
    source: { page: PAGE.leaseBlob, says: OUTCOMES },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "-1"), 201),
      blobLease(breakLease("0"), 202),
      blobLease(release("{A}"), 200),
      { req: "HEAD {c}/b", status: 200, answers: AVAILABLE },
    ],
  },
  {
    name: "Lease Blob: an infinite lease broken without a period is broken at once (202, x-ms-lease-time 0); a fixed one without a period stays breaking for the rest of its duration",
    service: "blob",
    features: LOCKS,
    source: {
      page: PAGE.leaseBlob,
      says: "x-ms-lease-break-period left out: a fixed-duration lease breaks after the remaining lease period, an infinite lease breaks immediately",
    },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "-1"), 201),
      { req: "HEAD {c}/b", status: 200, answers: LEASED_INFINITE },
      blobLease(breakLease(), 202, { answers: { "x-ms-lease-time": "0" } }),
      { req: "HEAD {c}/b", status: 200, answers: BROKEN },
      blobLease(acquire("{B}", "15"), 201),
      blobLease(breakLease(), 202, { answers: { "x-ms-lease-time": "!0" } }),
      { req: "HEAD {c}/b", status: 200, answers: BREAKING },
    ],
  },
  {
    name: "Lease Blob: while breaking, another id is 409 LeaseAlreadyPresent, the same id 409 LeaseIsBreakingAndCannotBeAcquired, renew 409 LeaseIsBrokenAndCannotBeRenewed, change 409 LeaseIsBreakingAndCannotBeChanged",
    service: "blob",
    features: LOCKS,
    source: { page: PAGE.leaseBlob, says: OUTCOMES },
    given: "container+blob",
    steps: [
      blobLease(acquire("{A}", "30"), 201),
      blobLease(breakLease("10"), 202, { answers: { "x-ms-lease-time": "10" } }),
      blobLease(acquire("{B}", "15"), 409, { code: "LeaseAlreadyPresent" }),
      blobLease(acquire("{A}", "15"), 409, { code: "LeaseIsBreakingAndCannotBeAcquired" }),
      blobLease(renew("{A}"), 409, { code: "LeaseIsBrokenAndCannotBeRenewed" }),
      blobLease(change("{A}", "{B}"), 409, { code: "LeaseIsBreakingAndCannotBeChanged" }),
    ],
  },
  {
    name: "Lease Blob: acquiring a missing blob is 404 BlobNotFound, in a missing container 404 ContainerNotFound",
    service: "blob",
    features: LOCKS,
    source: { page: PAGE.blobErrorCodes, says: "BlobNotFound (404), ContainerNotFound (404)" },
    given: "container",
    steps: [
      { req: "PUT {c}/missing?comp=lease", headers: acquire("{A}", "15"), status: 404, code: "BlobNotFound" },
      { req: "PUT {c}x/b?comp=lease", headers: acquire("{A}", "15"), status: 404, code: "ContainerNotFound" },
    ],
  },
  {
    name: "Writes to a leased blob: without the lease id 412 LeaseIdMissing, with another id 412 LeaseIdMismatchWithBlobOperation (Put Blob and Set Blob Metadata); a lease id on an unleased blob is 412 LeaseNotPresentWithBlobOperation",
    service: "blob",
    features: ["optimistic", "lease"],
    source: {
      page: PAGE.blobErrorCodes,
      says: "LeaseIdMissing, LeaseIdMismatchWithBlobOperation, LeaseNotPresentWithBlobOperation: Precondition Failed (412)",
    },
    given: "container+blob",
    steps: [
      {
        req: "PUT {c}/b?comp=metadata",
        headers: { "x-ms-lease-id": "{A}" },
        status: 412,
        code: "LeaseNotPresentWithBlobOperation",
      },
      blobLease(acquire("{A}", "15"), 201),
      putBlob("{c}/b", {}, 412, { code: "LeaseIdMissing" }),
      putBlob("{c}/b", { "x-ms-lease-id": "{B}" }, 412, { code: "LeaseIdMismatchWithBlobOperation" }),
      { req: "PUT {c}/b?comp=metadata", headers: { "x-ms-meta-k": "v" }, status: 412, code: "LeaseIdMissing" },
      {
        req: "PUT {c}/b?comp=metadata",
        headers: { "x-ms-meta-k": "v", "x-ms-lease-id": "{B}" },
        status: 412,
        code: "LeaseIdMismatchWithBlobOperation",
      },
    ],
  },
  {
    name: "Set Container Metadata: with the lease id 200 and a new ETag; without an id while leased 200 (a container lease guards Delete only); another id 412 LeaseIdMismatchWithContainerOperation; an id without a lease 412 LeaseNotPresentWithContainerOperation",
    service: "blob",
    features: ["optimistic", "lease"],
    source: {
      page: PAGE.setContainerMetadata,
      says: "x-ms-lease-id: if specified, succeeds only if the container's lease is active and matches this id, else 412; codes from Blob service error codes",
    },
    given: "container",
    steps: [
      { req: "GET {c}?restype=container", status: 200, capture: { cetag: "header:etag" } },
      {
        req: "PUT {c}?restype=container&comp=metadata",
        headers: { "x-ms-lease-id": "{A}" },
        status: 412,
        code: "LeaseNotPresentWithContainerOperation",
      },
      containerLease(acquire("{A}", "15"), 201),
      {
        req: "PUT {c}?restype=container&comp=metadata",
        headers: { "x-ms-lease-id": "{A}", "x-ms-meta-k": "1" },
        status: 200,
        answers: { etag: "!{cetag}" },
        capture: { cetag: "header:etag" },
      },
      {
        req: "PUT {c}?restype=container&comp=metadata",
        headers: { "x-ms-meta-k": "2" },
        status: 200,
        answers: { etag: "!{cetag}" },
      },
      {
        req: "PUT {c}?restype=container&comp=metadata",
        headers: { "x-ms-lease-id": "{B}", "x-ms-meta-k": "3" },
        status: 412,
        code: "LeaseIdMismatchWithContainerOperation",
      },
    ],
  },
  {
    name: "Set Container Metadata with the id of a 15 s lease that expired is 412 LeaseLost",
    service: "blob",
    features: ["optimistic"],
    source: {
      page: PAGE.blobErrorCodes,
      says: "LeaseLost (412): a lease ID was specified, but the lease for the blob/container has expired",
    },
    given: "container",
    steps: [
      containerLease(acquire("{A}", "15"), 201),
      {
        req: "PUT {c}?restype=container&comp=metadata",
        headers: { "x-ms-lease-id": "{A}", "x-ms-meta-k": "1" },
        waitMs: 16_000,
        status: 412,
        code: "LeaseLost",
        azurite: {
          code: "LeaseNotPresentWithContainerOperation",
          why: "the container-metadata cell reads any 412 to its write under its own lease as the lease having expired, never the code",
        },
      },
    ],
  },
];

/** Blob and container lease behaviours. */
export const BLOB_LEASES: readonly Behaviour[] = [...recorded, ...pageBacked];
