/**
 * Behaviours of Azure Files that no recording of the service covers: those the REST reference pages
 * describe (page-backed), and the few the responder had to decide without a source (unbacked, each
 * saying why). SMB clients cannot be recorded from the SDK's tests, so every SMB behaviour is here,
 * following "Manage file locks".
 */
import { acquire, change, fileLease, lease, release, shareLease } from "./steps.js";
import type { Behaviour, Step } from "./types.js";

const PAGES = "https://learn.microsoft.com/rest/api/storageservices";
const FILE_LOCKS = `${PAGES}/managing-file-locks`;

const replaceFile = (status: number, code?: string): Step => ({
  req: "PUT file",
  headers: { "x-ms-type": "file", "x-ms-content-length": "3" },
  status,
  ...(code ? { code } : {}),
});
const refused = (req: string, headers?: Record<string, string>, body?: string): Step => ({
  req,
  ...(headers ? { headers } : {}),
  ...(body !== undefined ? { body } : {}),
  status: 409,
  code: "SharingViolation",
});
const READ = { read: true };
const ALL = { read: true, write: true, delete: true };
const RANGE = { "x-ms-range": "bytes=0-1", "x-ms-write": "update" };

const pageBacked: Behaviour[] = [
  {
    name: "Lease Share: a 15 s lease expires after 15 s; another id may then acquire it",
    source: {
      page: `${PAGES}/lease-share`,
      says: "the lock duration can be 15 to 60 seconds, or infinite; an expired lease can be acquired (the Lease Blob outcome table the page follows)",
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}", "15"), 201),
      {
        req: "GET share?restype=share",
        wait: 15_000,
        status: 200,
        answers: { "x-ms-lease-state": "expired", "x-ms-lease-status": "unlocked" },
      },
      shareLease(acquire("{B}", "15"), 201),
    ],
  },
  {
    name: "Lease Share: breaking an expired lease leaves it broken at once (202, lease time 0)",
    source: {
      page: `${PAGES}/lease-blob`,
      says: "outcomes by lease state: Break on an Expired lease gives Broken (the share page uses the same states)",
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}", "15"), 201),
      shareLease(lease("break"), 202, { wait: 16_000, answers: { "x-ms-lease-time": "0" } }),
      {
        req: "GET share?restype=share",
        status: 200,
        answers: { "x-ms-lease-state": "broken", "x-ms-lease-status": "unlocked" },
      },
    ],
  },
  {
    name: "Lease Share: a break period keeps the lease breaking (acquire refused 409) until it ends",
    source: {
      page: `${PAGES}/lease-share`,
      says: "x-ms-lease-break-period: the proposed duration the lease should continue before it is broken, 0-60 s; break ensures that another client can't acquire a new lease until the current lease period has expired",
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      shareLease(lease("break", { "x-ms-lease-break-period": "10" }), 202, { answers: { "x-ms-lease-time": "10" } }),
      {
        req: "GET share?restype=share",
        status: 200,
        answers: { "x-ms-lease-state": "breaking", "x-ms-lease-status": "locked" },
      },
      shareLease(acquire("{B}", "15"), 409, { code: "LeaseAlreadyPresent" }),
      { req: "GET share?restype=share", wait: 10_000, status: 200, answers: { "x-ms-lease-state": "broken" } },
    ],
  },
  {
    name: "Set Share Properties on a leased share: 412 LeaseIdMissing without the id, 200 with it",
    source: {
      page: `${PAGES}/set-share-properties`,
      says: "x-ms-lease-id: required if the file share has an active lease (version 2020-02-10 and later)",
    },
    given: "share",
    steps: [
      shareLease(acquire("{A}"), 201),
      {
        req: "PUT share?restype=share&comp=properties",
        headers: { "x-ms-share-quota": "100" },
        status: 412,
        code: "LeaseIdMissing",
      },
      {
        req: "PUT share?restype=share&comp=properties",
        headers: { "x-ms-share-quota": "100", "x-ms-lease-id": "{A}" },
        status: 200,
      },
    ],
  },
  {
    name: "Create File with content: one request writes the content (version 2026-02-06 and later)",
    source: {
      page: `${PAGES}/create-file`,
      says: "beginning with version 2026-02-06, you can also create a file with content up to 4 MiB",
    },
    given: "share+dir",
    steps: [
      {
        req: "PUT file",
        headers: { "x-ms-version": "2026-02-06", "x-ms-type": "file", "x-ms-content-length": "5" },
        body: "hello",
        status: 201,
      },
      { req: "GET file", status: 200, bodyBase64: "aGVsbG8=" },
    ],
  },
  {
    name: "Put Range or Get File past the end of the file: 416 InvalidRange",
    source: {
      page: `${PAGES}/put-range`,
      says: "a range must lie within the file (Create File or Set File Properties sets the size); file service error codes: InvalidRange, 416",
    },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=10-12", "x-ms-write": "update" },
        body: "abc",
        status: 416,
        code: "InvalidRange",
      },
      { req: "GET file", headers: { "x-ms-range": "bytes=11-12" }, status: 416, code: "InvalidRange" },
    ],
  },
  {
    name: "SMB: Get File needs read sharing; Get File Properties is never refused",
    source: {
      page: FILE_LOCKS,
      says: "FileREST operations and the SMB share modes that make them fail with SharingViolation",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: { read: true, write: true } } },
      refused("GET file"),
      { req: "HEAD file", status: 200 },
      { smb: "closeAll" },
      { smb: { open: { read: true, write: true }, share: READ } },
      { req: "GET file", status: 200 },
    ],
  },
  {
    name: "SMB: Put Range, Set File Metadata and Set File Properties need write sharing",
    source: {
      page: FILE_LOCKS,
      says: "FileREST operations and the SMB share modes that make them fail with SharingViolation",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: READ } },
      refused("PUT file?comp=range", RANGE, "ab"),
      refused("PUT file?comp=metadata"),
      refused("PUT file?comp=properties"),
      { smb: "closeAll" },
      { smb: { open: READ, share: { read: true, write: true } } },
      { req: "PUT file?comp=range", headers: RANGE, body: "ab", status: 201 },
      { req: "PUT file?comp=metadata", status: 200 },
      { req: "PUT file?comp=properties", status: 200 },
    ],
  },
  {
    name: "SMB: Create File over an existing file needs write and delete sharing",
    source: {
      page: FILE_LOCKS,
      says: "Create File replaces the file: it fails unless the open handles share write and delete",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: { read: true, write: true } } },
      replaceFile(409, "SharingViolation"),
      { smb: "closeAll" },
      { smb: { open: READ, share: ALL } },
      replaceFile(201),
    ],
  },
  {
    name: "SMB: Delete File is refused while any SMB handle is open, whatever it shares",
    source: {
      page: `${PAGES}/delete-file`,
      says: "if the file is open on an SMB client, Delete File fails with 409 SharingViolation",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: ALL } },
      refused("DELETE file"),
      { smb: "closeAll" },
      { req: "DELETE file", status: 202 },
    ],
  },
  {
    name: "SMB: Lease File acquire fails with 409 SharingViolation unless every handle shares read, write and delete and none has write or delete access",
    source: {
      page: FILE_LOCKS,
      says: "Lease File: the acquire fails with SharingViolation while the file is open with a share mode other than Read/Write/Delete, or with write or delete access",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: { read: true, write: true } } },
      refused("PUT file?comp=lease", acquire("{A}")),
      { smb: "closeAll" },
      { smb: { open: { read: true, write: true }, share: ALL } },
      refused("PUT file?comp=lease", acquire("{A}")),
      { smb: "closeAll" },
      { smb: { open: READ, share: ALL } },
      fileLease(acquire("{A}"), 201),
    ],
  },
  {
    name: "SMB: a leased file refuses SMB opens for write or delete, not for read",
    source: { page: FILE_LOCKS, says: "an SMB client cannot open a leased file with write or delete access" },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      { smb: { open: { read: true, write: true }, share: ALL, refused: true } },
      { smb: { open: { delete: true }, share: ALL, refused: true } },
      { smb: { open: READ } },
      { req: "HEAD file", status: 200, answers: { "x-ms-lease-state": "leased" } },
    ],
  },
  {
    name: "SMB: opens conflict through access and share mode, as the page's examples show",
    source: {
      page: FILE_LOCKS,
      says: "SMB client open file examples: no violation; violation due to file access; violation due to share mode",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: { write: true } } },
      { smb: { open: { write: true }, share: READ } },
      { smb: "closeAll" },
      { smb: { open: { write: true }, share: READ } },
      { smb: { open: { write: true }, share: { write: true }, refused: true } },
      { smb: "closeAll" },
      { smb: { open: { write: true }, share: { write: true } } },
      { smb: { open: { write: true }, share: READ, refused: true } },
    ],
  },
  {
    name: "SMB: a file marked for deletion answers 409 DeletePending to every REST call until its last handle closes, then 404",
    source: {
      page: FILE_LOCKS,
      says: "a file an SMB client deletes stays delete-pending until every handle closes (DeletePending, SMBDeletePending in the source documents)",
    },
    given: "share+dir+file",
    steps: [
      { smb: { open: { read: true, delete: true }, share: ALL } },
      { smb: "deleteOnClose" },
      { req: "HEAD file", status: 409, code: "DeletePending" },
      { req: "GET file", status: 409, code: "DeletePending" },
      fileLease(acquire("{A}"), 409, { code: "DeletePending" }),
      { smb: "closeAll" },
      { req: "HEAD file", status: 404, code: "ResourceNotFound" },
    ],
  },
];

const unbacked: Behaviour[] = [
  {
    name: "Lease File release or change with another id: 409 LeaseIdMismatchWithLeaseOperation",
    source: { unbacked: "the code the Lease Blob page gives for blobs; not recorded for files" },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      fileLease(release("{B}"), 409, { code: "LeaseIdMismatchWithLeaseOperation" }),
      fileLease(change("{B}", "{guid}"), 409, { code: "LeaseIdMismatchWithLeaseOperation" }),
    ],
  },
  {
    name: "A write naming the id of a broken file lease: 412 LeaseNotPresentWithFileOperation",
    source: {
      unbacked:
        "by analogy with LeaseNotPresentWithBlobOperation; the recorded file codes (LeaseIdMismatchWithFileOperation) follow the blob names",
    },
    given: "share+dir+file",
    steps: [
      fileLease(acquire("{A}"), 201),
      fileLease(lease("break"), 202),
      {
        req: "PUT file?comp=metadata",
        headers: { "x-ms-lease-id": "{A}" },
        status: 412,
        code: "LeaseNotPresentWithFileOperation",
      },
    ],
  },
  {
    name: "A share operation naming a lease id while the share has no lease: 412 LeaseNotPresentWithContainerOperation",
    source: {
      unbacked:
        "the status follows Get Share Properties ('only if the lease is active and matches'); the code follows the recorded LeaseIdMismatchWithContainerOperation",
    },
    given: "share",
    steps: [
      {
        req: "GET share?restype=share",
        headers: { "x-ms-lease-id": "{A}" },
        status: 412,
        code: "LeaseNotPresentWithContainerOperation",
      },
    ],
  },
  {
    name: "A write refused both by an SMB handle and by a lease answers the SMB refusal (409) first",
    source: { unbacked: "the service documents no order between the two checks" },
    given: "share+dir+file",
    steps: [
      { smb: { open: READ, share: ALL } },
      fileLease(acquire("{A}"), 201),
      { smb: "closeAll" },
      { smb: { open: READ } },
      refused("PUT file?comp=metadata"),
    ],
  },
];

/** Every behaviour that no recording covers. */
export const DOCUMENTED: readonly Behaviour[] = [...pageBacked, ...unbacked];
