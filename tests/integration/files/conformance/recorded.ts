/**
 * Behaviours of Azure Files as recorded from the real service by the Azure SDK for JS
 * (Azure/azure-sdk-for-js, `sdk/storage/storage-file-share/recordings/`): only the facts the
 * library relies on, extracted by hand from each recording (method, path shape, the headers that
 * matter, status, `x-ms-error-code`, lease and SMB answer headers). The request headers come from
 * the recording where it has them (the `node/` recordings, service version 2021-10-04); the
 * `browsers/` recordings of share leases (2020-02-10) keep no request headers, and the recorder left
 * the SDK's random lease ids out of both, so those come from the SDK test named as the source.
 * Each recording starts with the test's `beforeEach` (`SETUP`), which is replayed too.
 */
import type { Behaviour, Given, RequestStep } from "./types.js";

/** Lease request headers: the action and those that go with it. */
function lease(action: string, more: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { "x-ms-lease-action": action, ...more };
}

/** Create File as the SDK (12.13, recorded) sends it without options. */
function createFile(length: number): Record<string, string> {
  return {
    "x-ms-type": "file",
    "x-ms-content-length": String(length),
    "x-ms-file-attributes": "None",
    "x-ms-file-creation-time": "now",
    "x-ms-file-last-write-time": "now",
    "x-ms-file-permission": "inherit",
  };
}

/** Set File Properties as the SDK (12.13, recorded) sends it: every SMB property preserved. */
const PRESERVE = {
  "x-ms-file-attributes": "preserve",
  "x-ms-file-creation-time": "preserve",
  "x-ms-file-last-write-time": "preserve",
  "x-ms-file-permission": "preserve",
};

const FILE_LEASED = { "x-ms-lease-state": "leased", "x-ms-lease-status": "locked", "x-ms-lease-duration": "infinite" };
const BROKEN = { "x-ms-lease-state": "broken", "x-ms-lease-status": "unlocked", "x-ms-lease-duration": null };
const AVAILABLE = { "x-ms-lease-state": "available", "x-ms-lease-status": "unlocked", "x-ms-lease-duration": null };

/** The recorded `beforeEach` of the SDK's tests: a share, a directory in it, an 11-byte file in that. */
export const SETUP: Readonly<Record<Given, readonly RequestStep[]>> = (() => {
  const share: RequestStep = { req: "PUT share?restype=share", status: 201 };
  const dir: RequestStep = {
    req: "PUT dir?restype=directory",
    headers: {
      "x-ms-file-attributes": "Directory",
      "x-ms-file-creation-time": "now",
      "x-ms-file-last-write-time": "now",
      "x-ms-file-permission": "inherit",
    },
    status: 201,
    capture: { dirKey: "x-ms-file-permission-key" },
  };
  const file: RequestStep = {
    req: "PUT file",
    headers: createFile(11),
    status: 201,
    answers: { "x-ms-file-attributes": "Archive", "x-ms-file-permission-key": "!{dirKey}" },
    capture: { created: "x-ms-file-creation-time", fileKey: "x-ms-file-permission-key", fileId: "x-ms-file-id" },
  };
  return { share: [share], "share+dir": [share, dir], "share+dir+file": [share, dir, file] };
})();

const L = (name: string) => `node/leaseclient/recording_${name}.json`;
const S = (name: string) => `browsers/leaseclient_for_share/recording_${name}.json`;
const F = (name: string) => `node/fileclient/recording_${name}.json`;
const FILE_TESTS = "test/leaseclient.spec.ts, LeaseClient";
const SHARE_TESTS = "test/leaseclient.spec.ts, LeaseClient for share";

/** File leases (Lease File) and what they guard. */
const fileLeases: Behaviour[] = [
  {
    name: "Lease File: acquire with a proposed id, infinite; Get File Properties reports it; release",
    source: { recording: L("acquirelease"), test: `${FILE_TESTS} > acquireLease` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
        answers: { "x-ms-lease-id": "{guid}" },
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
      {
        req: "PUT file?comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-time": null },
      },
    ],
  },
  {
    name: "Lease File: a second acquire with another id is 409 LeaseAlreadyPresent",
    source: {
      recording: L("acquirelease_again_with_another_lease_id"),
      test: `${FILE_TESTS} > acquireLease again with another lease id`,
    },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 409,
        code: "LeaseAlreadyPresent",
      },
    ],
  },
  {
    name: "Lease File: acquiring again with the active lease's id is granted (201)",
    source: {
      recording: L("acquirelease_again_with_same_lease_id"),
      test: `${FILE_TESTS} > acquireLease again with same lease id`,
    },
    given: "share+dir+file",
    steps: [1, 2].map(() => ({
      req: "PUT file?comp=lease",
      headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
      status: 201,
      answers: { "x-ms-lease-id": "{guid}" },
    })),
  },
  {
    name: "Lease File: a duration other than -1 is 400 InvalidHeaderValue",
    source: {
      recording: L("invalid_duration_for_acquirelease"),
      test: `${FILE_TESTS} > invalid duration for acquireLease`,
    },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "20", "x-ms-proposed-lease-id": "{A}" }),
        status: 400,
        code: "InvalidHeaderValue",
      },
    ],
  },
  {
    name: "Lease File: change moves the lease to the proposed id",
    source: { recording: L("changelease"), test: `${FILE_TESTS} > changeLease` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      {
        req: "PUT file?comp=lease",
        headers: lease("change", { "x-ms-lease-id": "{A}", "x-ms-proposed-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-id": "{guid}" },
      },
    ],
  },
  {
    name: "Lease File: change without a lease is 409 LeaseNotPresentWithLeaseOperation",
    source: {
      recording: L("changelease_before_acquiring_a_lease"),
      test: `${FILE_TESTS} > changeLease before acquiring a lease`,
    },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("change", { "x-ms-lease-id": "{A}", "x-ms-proposed-lease-id": "{guid}" }),
        status: 409,
        code: "LeaseNotPresentWithLeaseOperation",
      },
    ],
  },
  {
    name: "Lease File: break is immediate (202, lease time 0): broken, unlocked, no duration; release with the id",
    source: {
      recording: L("break_lease_and_then_release_it"),
      test: `${FILE_TESTS} > break lease and then release it`,
    },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
      { req: "PUT file?comp=lease", headers: lease("break"), status: 202, answers: { "x-ms-lease-time": "0" } },
      { req: "HEAD file", status: 200, answers: BROKEN },
      { req: "PUT file?comp=lease", headers: lease("release", { "x-ms-lease-id": "{A}" }), status: 200 },
    ],
  },
  {
    name: "Lease File: breaking a broken lease is 202 again",
    source: { recording: L("break_a_broken_lease"), test: `${FILE_TESTS} > break a broken lease` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "PUT file?comp=lease", headers: lease("break"), status: 202, answers: { "x-ms-lease-time": "0" } },
      { req: "PUT file?comp=lease", headers: lease("break"), status: 202, answers: { "x-ms-lease-time": "0" } },
      { req: "PUT file?comp=lease", headers: lease("release", { "x-ms-lease-id": "{A}" }), status: 200 },
    ],
  },
  {
    name: "Lease File: a broken lease can be acquired again",
    source: { recording: L("acquire_a_broken_lease"), test: `${FILE_TESTS} > acquire a broken lease` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "PUT file?comp=lease", headers: lease("break"), status: 202, answers: { "x-ms-lease-time": "0" } },
      { req: "HEAD file", status: 200, answers: BROKEN },
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
      { req: "PUT file?comp=lease", headers: lease("release", { "x-ms-lease-id": "{A}" }), status: 200 },
    ],
  },
  {
    name: "Create File over a leased file: 412 LeaseIdMissing without the id; with it a new file object, still leased",
    source: { recording: L("create_file"), test: `${FILE_TESTS} > create file` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
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
      {
        req: "GET file",
        status: 200,
        answers: { ...FILE_LEASED, "content-length": "10" },
        bodyBase64: "AAAAAAAAAAAAAA==",
      },
      { req: "PUT file?comp=lease", headers: lease("release", { "x-ms-lease-id": "{guid}" }), status: 200 },
    ],
  },
  {
    name: "Set File Properties on a leased file: 412 LeaseIdMissing without the id; with it 200, creation time kept",
    source: { recording: L("setproperties"), test: `${FILE_TESTS} > setProperties` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
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
      { req: "PUT file?comp=lease", headers: lease("release", { "x-ms-lease-id": "{guid}" }), status: 200 },
    ],
  },
  {
    name: "Delete File on a leased file: 412 LeaseIdMissing without the id, 202 with it",
    source: { recording: L("delete_file"), test: `${FILE_TESTS} > delete file` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
      { req: "DELETE file", status: 412, code: "LeaseIdMissing" },
      { req: "DELETE file", headers: { "x-ms-lease-id": "{guid}" }, status: 202 },
    ],
  },
  {
    name: "Put Range on a leased file: 412 LeaseIdMissing without the id, 201 with it; Delete Share then takes the share with its leased file",
    source: { recording: L("uploadrange"), test: `${FILE_TESTS} > uploadRange (and its afterEach)` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
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
    source: { recording: L("setmetadata"), test: `${FILE_TESTS} > setMetadata` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
      { req: "PUT file?comp=metadata", status: 412, code: "LeaseIdMissing" },
      { req: "PUT file?comp=metadata", headers: { "x-ms-lease-id": "{guid}" }, status: 200 },
    ],
  },
  {
    name: "Get File Properties with a lease id: 412 LeaseIdMismatchWithFileOperation unless it is the active lease's",
    source: { recording: L("getproperties"), test: `${FILE_TESTS} > getProperties` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "HEAD file", status: 200, answers: FILE_LEASED },
      {
        req: "HEAD file",
        headers: { "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithFileOperation",
      },
      { req: "HEAD file", headers: { "x-ms-lease-id": "{A}" }, status: 200, answers: FILE_LEASED },
    ],
  },
  {
    name: "Get File with a lease id: 412 LeaseIdMismatchWithFileOperation unless it is the active lease's",
    source: { recording: L("download_file"), test: `${FILE_TESTS} > download file` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "GET file", status: 200, answers: FILE_LEASED, bodyBase64: "AAAAAAAAAAAAAAA=" },
      {
        req: "GET file",
        headers: { "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithFileOperation",
      },
      { req: "GET file", headers: { "x-ms-lease-id": "{A}" }, status: 200, answers: FILE_LEASED },
    ],
  },
];

const SHARE_LEASED = { "x-ms-lease-state": "leased", "x-ms-lease-status": "locked", "x-ms-lease-duration": "infinite" };

/** Share leases (Lease Share) and what they guard. */
const shareLeases: Behaviour[] = [
  {
    name: "Lease Share: a 15 s lease broken within its first second answers 14 s (rounded down), twice; release answers lease time 0",
    source: { recording: S("break_a_broken_lease"), test: `${SHARE_TESTS} > break a broken lease` },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "15", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
        answers: { "x-ms-lease-id": "{A}" },
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("break"),
        wait: 500,
        status: 202,
        answers: { "x-ms-lease-time": "14" },
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("break"),
        status: 202,
        answers: { "x-ms-lease-time": "14" },
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{A}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Set Share Metadata on a leased share: 412 LeaseIdMissing without the id, 412 LeaseIdMismatchWithContainerOperation with another, 200 with it",
    source: {
      recording: S("lease_condition_for_write_operations"),
      test: `${SHARE_TESTS} > lease condition for write operations`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
        answers: { "x-ms-lease-id": "{A}" },
      },
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
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{A}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Get Share Properties with a lease id: 412 LeaseIdMismatchWithContainerOperation unless it is the active lease's",
    source: {
      recording: S("lease_condition_for_get_operations"),
      test: `${SHARE_TESTS} > lease condition for get operations`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "GET share?restype=share", status: 200, answers: SHARE_LEASED },
      {
        req: "GET share?restype=share",
        headers: { "x-ms-lease-id": "{guid}" },
        status: 412,
        code: "LeaseIdMismatchWithContainerOperation",
      },
      { req: "GET share?restype=share", headers: { "x-ms-lease-id": "{A}" }, status: 200, answers: SHARE_LEASED },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{A}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Delete Share on a leased share: 412 LeaseIdMissing without the id, 202 with it",
    source: { recording: S("lease_condition_for_delete"), test: `${SHARE_TESTS} > lease condition for delete` },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
        answers: { "x-ms-lease-id": "{guid}" },
      },
      { req: "DELETE share?restype=share", status: 412, code: "LeaseIdMissing" },
      { req: "DELETE share?restype=share", headers: { "x-ms-lease-id": "{guid}" }, status: 202 },
    ],
  },
  {
    name: "Lease Share: an infinite lease breaks at once (202, lease time 0): broken, unlocked, no duration",
    source: {
      recording: S("break_lease_and_then_release_it"),
      test: `${SHARE_TESTS} > break lease and then release it`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      { req: "GET share?restype=share", status: 200, answers: SHARE_LEASED },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("break"),
        status: 202,
        answers: { "x-ms-lease-time": "0" },
      },
      { req: "GET share?restype=share", status: 200, answers: BROKEN },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{A}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Lease Share: renew answers 200 with the lease id",
    source: { recording: S("renew_a_lease"), test: `${SHARE_TESTS} > renew a lease` },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 201,
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("renew", { "x-ms-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-id": "{guid}" },
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Lease Share: a second acquire with another id is 409 LeaseAlreadyPresent",
    source: {
      recording: S("acquirelease_again_with_another_lease_id"),
      test: `${SHARE_TESTS} > acquireLease again with another lease id`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{guid}" }),
        status: 409,
        code: "LeaseAlreadyPresent",
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{A}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Lease Share: change moves the lease to the proposed id",
    source: { recording: S("changelease"), test: `${SHARE_TESTS} > changeLease` },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": "{A}" }),
        status: 201,
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("change", { "x-ms-lease-id": "{A}", "x-ms-proposed-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-id": "{guid}" },
      },
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("release", { "x-ms-lease-id": "{guid}" }),
        status: 200,
        answers: { "x-ms-lease-time": "0" },
      },
    ],
  },
  {
    name: "Lease Share: change without a lease is 409 LeaseNotPresentWithLeaseOperation",
    source: {
      recording: S("changelease_before_acquiring_a_lease"),
      test: `${SHARE_TESTS} > changeLease before acquiring a lease`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("change", { "x-ms-lease-id": "{A}", "x-ms-proposed-lease-id": "{guid}" }),
        status: 409,
        code: "LeaseNotPresentWithLeaseOperation",
      },
    ],
  },
  {
    name: "Lease Share: a duration of 1 s is 400 InvalidHeaderValue",
    source: {
      recording: S("invalid_duration_for_acquirelease"),
      test: `${SHARE_TESTS} > invalid duration for acquireLease`,
    },
    given: "share",
    steps: [
      {
        req: "PUT share?restype=share&comp=lease",
        headers: lease("acquire", { "x-ms-lease-duration": "1", "x-ms-proposed-lease-id": "{A}" }),
        status: 400,
        code: "InvalidHeaderValue",
      },
    ],
  },
];

/** Create File, Put Range, Get File (Properties), Set File Metadata/Properties, Delete File. */
const files: Behaviour[] = [
  {
    name: "Create File without options: 201, attributes Archive, a permission inherited from the directory; a zero-filled, unleased file",
    source: {
      recording: F("create_with_default_parameters"),
      test: "test/fileclient.spec.ts > create with default parameters",
    },
    given: "share+dir",
    steps: [
      {
        req: "PUT file",
        headers: createFile(11),
        status: 201,
        answers: { "x-ms-file-attributes": "Archive", "x-ms-file-permission-key": "!{dirKey}" },
      },
      {
        req: "GET file",
        status: 200,
        answers: { ...AVAILABLE, "content-length": "11" },
        bodyBase64: "AAAAAAAAAAAAAAA=",
      },
    ],
  },
  {
    name: "Create File with every option: attributes answered in the service's order and spelling; times, key, HTTP headers and metadata kept",
    source: {
      recording: F("create_with_all_parameters_configured_setting_filepermissionkey"),
      test: "test/fileclient.spec.ts > create with all parameters configured setting filePermissionKey",
    },
    given: "share+dir",
    steps: [
      {
        req: "PUT file",
        headers: {
          "x-ms-type": "file",
          "x-ms-content-length": "512",
          "x-ms-cache-control": "fileCacheControl",
          "x-ms-content-disposition": "fileContentDisposition",
          "x-ms-content-encoding": "fileContentEncoding",
          "x-ms-content-language": "fileContentLanguage",
          "x-ms-content-type": "fileContentType",
          "x-ms-file-attributes": "ReadOnly|Hidden|System|Temporary|Archive|Offline|NotContentIndexed|NoScrubData",
          "x-ms-file-change-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-creation-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-last-write-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-permission-key": "{dirKey}",
          "x-ms-meta-key1": "vala",
          "x-ms-meta-key2": "valb",
        },
        status: 201,
        answers: {
          "x-ms-file-attributes":
            "ReadOnly | Hidden | System | Archive | Temporary | Offline | NotContentIndexed | NoScrubData",
          "x-ms-file-creation-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-change-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-permission-key": "{dirKey}",
        },
      },
      {
        req: "HEAD file",
        status: 200,
        answers: {
          "cache-control": "fileCacheControl",
          "content-disposition": "fileContentDisposition",
          "content-encoding": "fileContentEncoding",
          "content-language": "fileContentLanguage",
          "content-type": "fileContentType",
          "content-length": "512",
          "x-ms-meta-key1": "vala",
          "x-ms-meta-key2": "valb",
          "x-ms-file-last-write-time": "2023-06-07T22:52:55.6780000Z",
          ...AVAILABLE,
        },
      },
    ],
  },
  {
    name: "Put Range writes within the file (201, the range's Content-MD5, the new last write time); Get File with a range answers 206",
    source: { recording: F("uploadrange"), test: "test/fileclient.spec.ts > uploadRange" },
    given: "share+dir",
    steps: [
      { req: "PUT file", headers: createFile(10), status: 201, capture: { created: "x-ms-file-creation-time" } },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=0-4", "x-ms-write": "update" },
        body: "Hello",
        wait: 250,
        status: 201,
        answers: { "content-md5": "ixqZU8RhEpaoJ6v4xHgE1w==", "x-ms-file-last-write-time": "!{created}" },
      },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=5-9", "x-ms-write": "update" },
        body: "World",
        status: 201,
        answers: { "content-md5": "9aeSTmIehMkoCpon4by39g==" },
      },
      {
        req: "GET file",
        headers: { "x-ms-range": "bytes=0-7" },
        status: 206,
        answers: {
          "content-range": "bytes 0-7/10",
          "content-length": "8",
          "x-ms-file-creation-time": "{created}",
          "x-ms-file-change-time": "!{created}",
        },
        bodyBase64: "SGVsbG9Xb3I=",
      },
    ],
  },
  {
    name: "Put Range with x-ms-write: clear zeroes the range (201, no Content-MD5)",
    source: { recording: F("clearrange"), test: "test/fileclient.spec.ts > clearRange" },
    given: "share+dir",
    steps: [
      { req: "PUT file", headers: createFile(10), status: 201 },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=0-4", "x-ms-write": "update" },
        body: "Hello",
        status: 201,
      },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=5-9", "x-ms-write": "update" },
        body: "World",
        status: 201,
      },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=1-8", "x-ms-write": "clear" },
        status: 201,
        answers: { "content-md5": null, "x-ms-file-last-write-time": "*" },
      },
      { req: "GET file", status: 200, bodyBase64: "SAAAAAAAAAAAZA==" },
    ],
  },
  {
    name: "Set File Properties with x-ms-content-length resizes the file; the last write time moves though 'preserve' was sent",
    source: { recording: F("resize"), test: "test/fileclient.spec.ts > resize" },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=properties",
        headers: { ...PRESERVE, "x-ms-content-length": "1" },
        wait: 250,
        status: 200,
        answers: {
          "x-ms-file-creation-time": "{created}",
          "x-ms-file-last-write-time": "!{created}",
          "x-ms-file-change-time": "!{created}",
        },
      },
      { req: "HEAD file", status: 200, answers: { "content-length": "1", ...AVAILABLE } },
    ],
  },
  {
    name: "Set File Metadata replaces the metadata; the change time moves, the last write time does not",
    source: {
      recording: F("setmetadata_with_new_metadata_set"),
      test: "test/fileclient.spec.ts > setMetadata with new metadata set",
    },
    given: "share+dir+file",
    steps: [
      { req: "PUT file?comp=metadata", headers: { "x-ms-meta-a": "a", "x-ms-meta-b": "b" }, wait: 250, status: 200 },
      {
        req: "HEAD file",
        status: 200,
        answers: {
          "x-ms-meta-a": "a",
          "x-ms-meta-b": "b",
          "x-ms-file-last-write-time": "{created}",
          "x-ms-file-change-time": "!{created}",
        },
      },
    ],
  },
  {
    name: "Delete File: 202",
    source: { recording: F("delete"), test: "test/fileclient.spec.ts > delete" },
    given: "share+dir+file",
    steps: [{ req: "DELETE file", status: 202 }],
  },
  {
    name: "Delete File in a directory that does not exist: 404 ParentNotFound",
    source: {
      recording: F("deleteifexists_when_parent_not_exists"),
      test: "test/fileclient.spec.ts > deleteIfExists when parent not exists",
    },
    given: "share+dir",
    steps: [{ req: "DELETE nodir/file", status: 404, code: "ParentNotFound" }],
  },
];

/** Every recording-backed behaviour. */
export const RECORDED: readonly Behaviour[] = [...fileLeases, ...shareLeases, ...files];
