/**
 * File and share leases as recorded from the real service by the Azure SDK for JS
 * (Azure/azure-sdk-for-js, `sdk/storage/storage-file-share/recordings/`): only the facts the
 * library relies on, extracted by hand from each recording (method, path shape, the headers that
 * matter, status, `x-ms-error-code`, lease answer headers). The `node/` recordings (service version
 * 2021-10-04) keep the request headers; the `browsers/` recordings of share leases (2020-02-10) keep
 * none, and the recorder left the SDK's random lease ids out of both: those come from the SDK test
 * named as the source (test/leaseclient.spec.ts), `{A}` standing for the SDK's random id.
 */
import {
  acquire,
  BROKEN,
  change,
  createFile,
  fileLease,
  LEASED,
  lease,
  PRESERVE,
  release,
  shareLease,
} from "./steps.js";
import type { Behaviour } from "./types.js";

const L = (name: string) => `node/leaseclient/recording_${name}.json`;
const S = (name: string) => `browsers/leaseclient_for_share/recording_${name}.json`;
const FILE_TESTS = "test/leaseclient.spec.ts, LeaseClient >";
const SHARE_TESTS = "test/leaseclient.spec.ts, LeaseClient for share >";
const LEASE_TIME_0 = { answers: { "x-ms-lease-time": "0" } };

const fileLeases: Behaviour[] = [
  {
    name: "Lease File: acquire with a proposed id, infinite; Get File Properties reports it; release",
    source: { recording: L("acquirelease"), test: `${FILE_TESTS} acquireLease` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201, { answers: { "x-ms-lease-id": "{guid}" } }),
      { req: "HEAD file", status: 200, answers: LEASED },
      fileLease(release("{guid}"), 200, { answers: { "x-ms-lease-time": null } }),
    ],
  },
  {
    name: "Lease File: a second acquire with another id is 409 LeaseAlreadyPresent",
    source: {
      recording: L("acquirelease_again_with_another_lease_id"),
      test: `${FILE_TESTS} acquireLease again with another lease id`,
    },
    given: "share+dir+file",
    steps: [fileLease(acquire("{A}"), 201), fileLease(acquire("{guid}"), 409, { code: "LeaseAlreadyPresent" })],
  },
  {
    name: "Lease File: acquiring again with the active lease's id is granted (201)",
    source: {
      recording: L("acquirelease_again_with_same_lease_id"),
      test: `${FILE_TESTS} acquireLease again with same lease id`,
    },
    given: "share+dir+file",
    steps: [1, 2].map(() => fileLease(acquire("{guid}"), 201, { answers: { "x-ms-lease-id": "{guid}" } })),
  },
  {
    name: "Lease File: a duration other than -1 is 400 InvalidHeaderValue",
    source: {
      recording: L("invalid_duration_for_acquirelease"),
      test: `${FILE_TESTS} invalid duration for acquireLease`,
    },
    given: "share+dir+file",
    steps: [fileLease(acquire("{A}", "20"), 400, { code: "InvalidHeaderValue" })],
  },
  {
    name: "Lease File: change moves the lease to the proposed id",
    source: { recording: L("changelease"), test: `${FILE_TESTS} changeLease` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      fileLease(change("{A}", "{guid}"), 200, { answers: { "x-ms-lease-id": "{guid}" } }),
    ],
  },
  {
    name: "Lease File: change without a lease is 409 LeaseNotPresentWithLeaseOperation",
    source: {
      recording: L("changelease_before_acquiring_a_lease"),
      test: `${FILE_TESTS} changeLease before acquiring a lease`,
    },
    given: "share+dir+file",
    steps: [fileLease(change("{A}", "{guid}"), 409, { code: "LeaseNotPresentWithLeaseOperation" })],
  },
  {
    name: "Lease File: break is immediate (202, lease time 0): broken, unlocked, no duration; release with the id",
    source: { recording: L("break_lease_and_then_release_it"), test: `${FILE_TESTS} break lease and then release it` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      { req: "HEAD file", status: 200, answers: LEASED },
      fileLease(lease("break"), 202, LEASE_TIME_0),
      { req: "HEAD file", status: 200, answers: BROKEN },
      fileLease(release("{A}"), 200),
    ],
  },
  {
    name: "Lease File: breaking a broken lease is 202 again",
    source: { recording: L("break_a_broken_lease"), test: `${FILE_TESTS} break a broken lease` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      fileLease(lease("break"), 202, LEASE_TIME_0),
      fileLease(lease("break"), 202, LEASE_TIME_0),
      fileLease(release("{A}"), 200),
    ],
  },
  {
    name: "Lease File: a broken lease can be acquired again",
    source: { recording: L("acquire_a_broken_lease"), test: `${FILE_TESTS} acquire a broken lease` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      fileLease(lease("break"), 202, LEASE_TIME_0),
      { req: "HEAD file", status: 200, answers: BROKEN },
      fileLease(acquire("{A}"), 201),
      { req: "HEAD file", status: 200, answers: LEASED },
      fileLease(release("{A}"), 200),
    ],
  },
  {
    name: "Create File over a leased file: 412 LeaseIdMissing without the id; with it a new file object, still leased",
    source: { recording: L("create_file"), test: `${FILE_TESTS} create file` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201),
      { req: "HEAD file", status: 200, answers: LEASED },
      { req: "PUT file", headers: createFile(10), status: 412, code: "LeaseIdMissing" },
      {
        req: "PUT file",
        headers: { ...createFile(10), "x-ms-lease-id": "{guid}" },
        wait: 250,
        status: 201,
        // "now": a new creation time; the same directory's inherited permission: the same key; the same file id.
        answers: {
          "x-ms-file-creation-time": "!{created}",
          "x-ms-file-permission-key": "{fileKey}",
          "x-ms-file-id": "{fileId}",
        },
      },
      { req: "GET file", status: 200, answers: { ...LEASED, "content-length": "10" }, bodyBase64: "AAAAAAAAAAAAAA==" },
      fileLease(release("{guid}"), 200),
    ],
  },
  {
    name: "Set File Properties on a leased file: 412 LeaseIdMissing without the id; with it 200, creation time kept",
    source: { recording: L("setproperties"), test: `${FILE_TESTS} setProperties` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201),
      { req: "PUT file?comp=properties", headers: PRESERVE, status: 412, code: "LeaseIdMissing" },
      {
        req: "PUT file?comp=properties",
        headers: { ...PRESERVE, "x-ms-lease-id": "{guid}" },
        wait: 250,
        status: 200,
        answers: {
          "x-ms-file-creation-time": "{created}",
          "x-ms-file-last-write-time": "{created}",
          "x-ms-file-change-time": "!{created}",
          "x-ms-file-permission-key": "{fileKey}",
        },
      },
      fileLease(release("{guid}"), 200),
    ],
  },
  {
    name: "Delete File on a leased file: 412 LeaseIdMissing without the id, 202 with it",
    source: { recording: L("delete_file"), test: `${FILE_TESTS} delete file` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201),
      { req: "HEAD file", status: 200, answers: LEASED },
      { req: "DELETE file", status: 412, code: "LeaseIdMissing" },
      { req: "DELETE file", headers: { "x-ms-lease-id": "{guid}" }, status: 202 },
    ],
  },
  {
    name: "Put Range on a leased file: 412 LeaseIdMissing without the id, 201 with it; Delete Share then takes the share with its leased file",
    source: { recording: L("uploadrange"), test: `${FILE_TESTS} uploadRange (and its afterEach)` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201),
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=0-10", "x-ms-write": "update" },
        body: "Hello World",
        status: 412,
        code: "LeaseIdMissing",
      },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=0-10", "x-ms-write": "update", "x-ms-lease-id": "{guid}" },
        body: "Hello World",
        status: 201,
        answers: { "content-md5": "sQqNsWTgdUEFt6mb5y4/5Q==", "x-ms-file-last-write-time": "*" },
      },
      { req: "DELETE share?restype=share", status: 202 },
    ],
  },
  {
    name: "Set File Metadata on a leased file: 412 LeaseIdMissing without the id, 200 with it",
    source: { recording: L("setmetadata"), test: `${FILE_TESTS} setMetadata` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{guid}"), 201),
      { req: "PUT file?comp=metadata", status: 412, code: "LeaseIdMissing" },
      { req: "PUT file?comp=metadata", headers: { "x-ms-lease-id": "{guid}" }, status: 200 },
    ],
  },
  ...(["HEAD", "GET"] as const).map((method): Behaviour => ({
    name: `${method === "HEAD" ? "Get File Properties" : "Get File"} with a lease id: 412 LeaseIdMismatchWithFileOperation unless it is the active lease's`,
    source:
      method === "HEAD"
        ? { recording: L("getproperties"), test: `${FILE_TESTS} getProperties` }
        : { recording: L("download_file"), test: `${FILE_TESTS} download file` },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      { req: `${method} file`, status: 200, answers: LEASED },
      {
        req: `${method} file`,
        headers: { "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithFileOperation",
      },
      { req: `${method} file`, headers: { "x-ms-lease-id": "{A}" }, status: 200, answers: LEASED },
    ],
  })),
];

const shareLeases: Behaviour[] = [
  {
    name: "Lease Share: a 15 s lease broken within its first second answers 14 s (rounded down), twice; release answers lease time 0",
    source: { recording: S("break_a_broken_lease"), test: `${SHARE_TESTS} break a broken lease` },
    given: "share",
    steps: [
      shareLease(acquire("{A}", "15"), 201, { answers: { "x-ms-lease-id": "{A}" } }),
      shareLease(lease("break"), 202, { wait: 500, answers: { "x-ms-lease-time": "14" } }),
      shareLease(lease("break"), 202, { answers: { "x-ms-lease-time": "14" } }),
      shareLease(release("{A}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Set Share Metadata on a leased share: 412 LeaseIdMissing without the id, 412 LeaseIdMismatchWithContainerOperation with another, 200 with it",
    source: {
      recording: S("lease_condition_for_write_operations"),
      test: `${SHARE_TESTS} lease condition for write operations`,
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201, { answers: { "x-ms-lease-id": "{A}" } }),
      {
        req: "PUT share?restype=share&comp=metadata",
        headers: { "x-ms-meta-key": "val" },
        status: 412,
        code: "LeaseIdMissing",
      },
      {
        req: "PUT share?restype=share&comp=metadata",
        headers: { "x-ms-meta-key": "val", "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithContainerOperation",
      },
      {
        req: "PUT share?restype=share&comp=metadata",
        headers: { "x-ms-meta-key": "val", "x-ms-lease-id": "{A}" },
        status: 200,
      },
      shareLease(release("{A}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Get Share Properties with a lease id: 412 LeaseIdMismatchWithContainerOperation unless it is the active lease's",
    source: {
      recording: S("lease_condition_for_get_operations"),
      test: `${SHARE_TESTS} lease condition for get operations`,
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      { req: "GET share?restype=share", status: 200, answers: LEASED },
      {
        req: "GET share?restype=share",
        headers: { "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithContainerOperation",
      },
      { req: "GET share?restype=share", headers: { "x-ms-lease-id": "{A}" }, status: 200, answers: LEASED },
      shareLease(release("{A}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Delete Share on a leased share: 412 LeaseIdMissing without the id, 202 with it",
    source: { recording: S("lease_condition_for_delete"), test: `${SHARE_TESTS} lease condition for delete` },
    given: "share",
    steps: [
      shareLease(acquire("{guid}"), 201, { answers: { "x-ms-lease-id": "{guid}" } }),
      { req: "DELETE share?restype=share", status: 412, code: "LeaseIdMissing" },
      { req: "DELETE share?restype=share", headers: { "x-ms-lease-id": "{guid}" }, status: 202 },
    ],
  },
  {
    name: "Lease Share: an infinite lease breaks at once (202, lease time 0): broken, unlocked, no duration",
    source: { recording: S("break_lease_and_then_release_it"), test: `${SHARE_TESTS} break lease and then release it` },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      { req: "GET share?restype=share", status: 200, answers: LEASED },
      shareLease(lease("break"), 202, LEASE_TIME_0),
      { req: "GET share?restype=share", status: 200, answers: BROKEN },
      shareLease(release("{A}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Lease Share: renew answers 200 with the lease id",
    source: { recording: S("renew_a_lease"), test: `${SHARE_TESTS} renew a lease` },
    given: "share",
    steps: [
      shareLease(acquire("{guid}"), 201),
      shareLease(lease("renew", { "x-ms-lease-id": "{guid}" }), 200, { answers: { "x-ms-lease-id": "{guid}" } }),
      shareLease(release("{guid}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Lease Share: a second acquire with another id is 409 LeaseAlreadyPresent",
    source: {
      recording: S("acquirelease_again_with_another_lease_id"),
      test: `${SHARE_TESTS} acquireLease again with another lease id`,
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      shareLease(acquire("{guid}"), 409, { code: "LeaseAlreadyPresent" }),
      shareLease(release("{A}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Lease Share: change moves the lease to the proposed id",
    source: { recording: S("changelease"), test: `${SHARE_TESTS} changeLease` },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      shareLease(change("{A}", "{guid}"), 200, { answers: { "x-ms-lease-id": "{guid}" } }),
      shareLease(release("{guid}"), 200, LEASE_TIME_0),
    ],
  },
  {
    name: "Lease Share: change without a lease is 409 LeaseNotPresentWithLeaseOperation",
    source: {
      recording: S("changelease_before_acquiring_a_lease"),
      test: `${SHARE_TESTS} changeLease before acquiring a lease`,
    },
    given: "share",
    steps: [shareLease(change("{A}", "{guid}"), 409, { code: "LeaseNotPresentWithLeaseOperation" })],
  },
  {
    name: "Lease Share: a duration of 1 s is 400 InvalidHeaderValue",
    source: {
      recording: S("invalid_duration_for_acquirelease"),
      test: `${SHARE_TESTS} invalid duration for acquireLease`,
    },
    given: "share",
    steps: [shareLease(acquire("{A}", "1"), 400, { code: "InvalidHeaderValue" })],
  },
];

/** Recording-backed lease behaviours. */
export const RECORDED_LEASES: readonly Behaviour[] = [...fileLeases, ...shareLeases];
