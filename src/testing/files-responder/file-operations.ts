/**
 * File operations of the Files responder. Each follows the REST reference page named above it, and
 * the recorded answers of the service that tests/integration/files/conformance.test.ts replays.
 *
 * Order of the checks (the service does not document one): the share, the file (404, ParentNotFound
 * when its directory is missing), an SMB delete-pending mark (409), the SMB handles' share modes
 * (409 SharingViolation, the table in `./smb-rules.ts`), then the lease (412).
 *
 * SMB delete-pending, from "Manage file locks"
 * (https://learn.microsoft.com/rest/api/storageservices/managing-file-locks) and the source
 * documents: while an SMB client has marked the file for deletion and any handle is still open,
 * every REST call fails with 409 (DeletePending, called SMBDeletePending in older documents), and
 * only once the last handle closes is the file gone (404). A REST Delete File is atomic and never
 * leaves the file delete-pending.
 */
import { createHash, randomUUID } from "node:crypto";
import { AVAILABLE, applyLeaseAction, checkRead, checkWrite, leaseHeaders } from "./leases.js";
import {
  checkMetadata,
  fail,
  metadataHeaders,
  versionHeaders,
  type ResponderReply,
  type ResponderRequest,
} from "./protocol.js";
import {
  leaseRequest,
  notImplemented,
  requireParent,
  requireShare,
  smbHeaders,
  throwRefusal,
  touch,
} from "./share-operations.js";
import { checkSmbHandles, type SmbCheckedOperation } from "./smb-rules.js";
import { createdSmbProperties, updateSmbProperties } from "./smb-properties.js";
import { isoWith7Digits, type FilesStore, type StoredDirectory, type StoredFile, type StoredShare } from "./store.js";

/** The largest range one Put Range (or one Create File with content) carries: 4 MiB. */
const MAX_RANGE_BYTES = 4 * 1024 * 1024;

/** What the file operations need besides the store. */
interface FileOperationSettings {
  /** The `x-ms-error-code` for a delete-pending file. */
  readonly deletePendingCode: string;
}

/** Dispatches a request on a file path (no `restype`). */
export function fileOperation(
  store: FilesStore,
  settings: FileOperationSettings,
  req: ResponderRequest,
): ResponderReply {
  const comp = req.query.get("comp");
  const share = requireShare(store, req);
  const key = handleKey(share, req.path);
  if (store.isDeletePending(key)) {
    fail(409, settings.deletePendingCode, "The specified resource is marked for deletion by an SMB client.");
  }
  if (req.method === "PUT" && comp === null) return createFile(store, share, req);
  const file = requireFile(store, share, req.path);
  const now = store.now();
  const guard = (operation: SmbCheckedOperation, lease: "read" | "write") => {
    checkSmbHandles(store, key, operation);
    throwRefusal((lease === "write" ? checkWrite : checkRead)("file", file.lease, req.header("x-ms-lease-id"), now));
  };
  switch (`${req.method} ${comp ?? ""}`) {
    case "GET ":
      guard("Get File", "read");
      return getFile(file, req, now);
    case "HEAD ":
      guard("Get File Properties", "read");
      return { status: 200, headers: fileHeaders(file, now) };
    case "PUT range":
      guard("Put Range", "write");
      return putRange(store, file, req);
    case "PUT metadata":
      guard("Set File Metadata", "write");
      return setFileMetadata(store, file, req);
    case "PUT properties":
      guard("Set File Properties", "write");
      return setFileProperties(store, share, file, req);
    case "PUT lease":
      if (req.header("x-ms-lease-action")?.toLowerCase() === "acquire")
        checkSmbHandles(store, key, "Lease File acquire");
      return leaseFile(store, file, req);
    case "DELETE ":
      guard("Delete File", "write");
      share.entries.delete(req.path.toLowerCase());
      return { status: 202 };
    default:
      return notImplemented(`${req.method} on a file with comp=${comp ?? "(none)"}`);
  }
}

/** The key of a file's SMB handles: `share/path`, lower-cased. */
export function handleKey(share: StoredShare, path: string): string {
  return `${share.name}/${path}`.toLowerCase();
}

// Create File: https://learn.microsoft.com/rest/api/storageservices/create-file
// "Creates a new file or replaces a file"; x-ms-type: file and x-ms-content-length are required;
// "Beginning with version 2026-02-06, you can also create file with content up to 4MiB". Replacing a
// leased file needs the lease id (412 LeaseIdMissing, recorded from the service), and the lease
// stays on the replaced file (recorded: Get File after the replace still reports "leased").
function createFile(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  if (req.header("x-ms-type")?.toLowerCase() !== "file") {
    fail(400, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not specified: x-ms-type.");
  }
  if (req.header("x-ms-structured-body")) notImplemented("structured-message (CRC64) request bodies");
  const size = Number(req.header("x-ms-content-length"));
  if (!Number.isSafeInteger(size) || size < 0) {
    fail(
      400,
      "InvalidHeaderValue",
      "The value for one of the HTTP headers is not in the correct format: x-ms-content-length.",
    );
  }
  if (req.body.length > 0) {
    if (req.body.length > MAX_RANGE_BYTES)
      fail(413, "RequestBodyTooLarge", "Create File carries at most 4 MiB of content.");
    if (req.body.length !== size) {
      fail(400, "InvalidHeaderValue", "The content sent with Create File must be as long as x-ms-content-length.");
    }
    checkTransactionalMd5(req);
  }
  requireParent(store, share, req.path);
  checkMetadata(req.metadata);
  const existing = store.entry(share, req.path);
  if (existing?.kind === "directory")
    fail(409, "ResourceTypeMismatch", "The specified resource type does not match the type of the resource.");
  const leaseId = req.header("x-ms-lease-id");
  if (existing) {
    checkSmbHandles(store, handleKey(share, req.path), "Create File");
    throwRefusal(checkWrite("file", existing.lease, leaseId, store.now()));
  } else {
    throwRefusal(checkWrite("file", AVAILABLE, leaseId, store.now()));
  }
  const file: StoredFile = {
    kind: "file",
    name: req.path.split("/").pop()!,
    content: req.body.length > 0 ? Buffer.from(req.body) : Buffer.alloc(size),
    metadata: req.metadata,
    etag: store.nextEtag(),
    lastModified: store.now(),
    http: httpPropertiesOf(req),
    // A new file object: times "now" and the permission inherited unless given (./smb-properties.ts);
    // recorded, the replaced file keeps its file id and its lease.
    smb: createdSmbProperties(
      req,
      store.now(),
      parentOf(store, share, req.path).smb.permissionKey,
      existing?.smb.fileId ?? store.nextFileId(),
    ),
    lease: existing?.lease ?? AVAILABLE,
  };
  share.entries.set(req.path.toLowerCase(), file);
  return {
    status: 201,
    headers: { ...versionHeaders(file), ...smbHeaders(file), "x-ms-request-server-encrypted": "true" },
  };
}

// Get File: https://learn.microsoft.com/rest/api/storageservices/get-file
// 200 for the whole file (with the stored Content-MD5), 206 with Content-Range for a range
// (Range or x-ms-range: https://learn.microsoft.com/rest/api/storageservices/specifying-the-range-header-for-file-service-operations);
// a range starting past the end is 416 InvalidRange.
function getFile(file: StoredFile, req: ResponderRequest, now: number): ResponderReply {
  const rangeHeader = req.header("x-ms-range") ?? req.header("range");
  const headers = fileHeaders(file, now);
  if (rangeHeader === undefined) {
    return { status: 200, headers: { ...headers, "content-md5": file.http.contentMD5 }, body: file.content };
  }
  const range = parseRange(rangeHeader, false);
  if (range.start >= file.content.length) {
    fail(416, "InvalidRange", "The range specified is invalid for the current size of the resource.");
  }
  const end = Math.min(range.end ?? file.content.length - 1, file.content.length - 1);
  const body = file.content.subarray(range.start, end + 1);
  const wantMd5 = req.header("x-ms-range-get-content-md5") === "true";
  if (wantMd5 && body.length > MAX_RANGE_BYTES) {
    fail(400, "OutOfRangeInput", "x-ms-range-get-content-md5 needs a range of at most 4 MiB.");
  }
  return {
    status: 206,
    headers: {
      ...headers,
      "content-length": String(body.length),
      "content-range": `bytes ${range.start}-${end}/${file.content.length}`,
      "content-md5": wantMd5 ? md5(body) : undefined,
    },
    body,
  };
}

// Put Range: https://learn.microsoft.com/rest/api/storageservices/put-range
// x-ms-write update|clear; Range/x-ms-range with start and end; "for update operations, the range
// can be up to 4 MiB in size"; Content-Length must be 0 for clear; a Content-MD5 that does not match
// is 400; the response carries the range's Content-MD5.
function putRange(store: FilesStore, file: StoredFile, req: ResponderRequest): ResponderReply {
  const write = req.header("x-ms-write")?.toLowerCase();
  if (write !== "update" && write !== "clear") {
    fail(400, "InvalidHeaderValue", "The value for one of the HTTP headers is not in the correct format: x-ms-write.");
  }
  const range = parseRange(req.header("x-ms-range") ?? req.header("range"), true);
  const end = range.end!;
  if (end >= file.content.length)
    fail(416, "InvalidRange", "The range specified is invalid for the current size of the resource.");
  const length = end - range.start + 1;
  if (write === "update") {
    if (length > MAX_RANGE_BYTES) fail(413, "RequestBodyTooLarge", "A Put Range update carries at most 4 MiB.");
    if (req.body.length !== length)
      fail(400, "InvalidHeaderValue", "Content-Length must equal the length of the range.");
    checkTransactionalMd5(req);
    req.body.copy(file.content, range.start);
  } else {
    if (req.body.length !== 0) fail(400, "InvalidHeaderValue", "Content-Length must be 0 when x-ms-write is clear.");
    file.content.fill(0, range.start, end + 1);
  }
  touch(store, file);
  // Recorded: Put Range moves the last write and change times, and answers the last write time.
  file.smb.lastWriteTime = file.smb.changeTime = isoWith7Digits(store.now());
  return {
    status: 201,
    headers: {
      ...versionHeaders(file),
      "content-md5": write === "update" ? md5(req.body) : undefined,
      "x-ms-file-last-write-time": file.smb.lastWriteTime,
      "x-ms-request-server-encrypted": write === "update" ? "true" : undefined,
    },
  };
}

// Set File Metadata: https://learn.microsoft.com/rest/api/storageservices/set-file-metadata
// Replaces all metadata; needs the lease id on a leased file. Recorded: the change time moves, the
// last write time does not.
function setFileMetadata(store: FilesStore, file: StoredFile, req: ResponderRequest): ResponderReply {
  checkMetadata(req.metadata);
  file.metadata = req.metadata;
  touch(store, file);
  file.smb.changeTime = isoWith7Digits(store.now());
  return { status: 200, headers: { ...versionHeaders(file), "x-ms-request-server-encrypted": "true" } };
}

// Set File Properties: https://learn.microsoft.com/rest/api/storageservices/set-file-properties
// HTTP headers (replaced), x-ms-content-length (resize: truncates or zero-extends) and the SMB
// properties (kept unless given, ./smb-properties.ts).
function setFileProperties(
  store: FilesStore,
  share: StoredShare,
  file: StoredFile,
  req: ResponderRequest,
): ResponderReply {
  const resize = req.header("x-ms-content-length");
  if (resize !== undefined) {
    const size = Number(resize);
    if (!Number.isSafeInteger(size) || size < 0)
      fail(400, "InvalidHeaderValue", "x-ms-content-length must be a size in bytes.");
    const content = Buffer.alloc(size);
    file.content.copy(content, 0, 0, Math.min(size, file.content.length));
    file.content = content;
  }
  const parentKey = parentOf(store, share, req.path).smb.permissionKey;
  updateSmbProperties(req, file, store.now(), parentKey, resize !== undefined);
  file.http = httpPropertiesOf(req);
  touch(store, file);
  return {
    status: 200,
    headers: { ...versionHeaders(file), ...smbHeaders(file), "x-ms-request-server-encrypted": "true" },
  };
}

// Lease File: https://learn.microsoft.com/rest/api/storageservices/lease-file (state machine in leases.ts).
function leaseFile(store: FilesStore, file: StoredFile, req: ResponderRequest): ResponderReply {
  const outcome = applyLeaseAction("file", file.lease, leaseRequest(req), store.now(), randomUUID);
  if (!outcome.ok) fail(outcome.status, outcome.code, outcome.message);
  file.lease = outcome.lease;
  return { status: outcome.status, headers: { ...versionHeaders(file), ...outcome.headers } };
}

// Get File Properties: https://learn.microsoft.com/rest/api/storageservices/get-file-properties
// (the same headers as Get File, without a body).
function fileHeaders(file: StoredFile, now: number): Record<string, string | undefined> {
  return {
    ...versionHeaders(file),
    ...metadataHeaders(file.metadata),
    ...leaseHeaders(file.lease, now),
    ...smbHeaders(file),
    "content-length": String(file.content.length),
    "content-type": file.http.contentType ?? "application/octet-stream",
    "content-encoding": file.http.contentEncoding,
    "content-language": file.http.contentLanguage,
    "cache-control": file.http.cacheControl,
    "content-disposition": file.http.contentDisposition,
    "accept-ranges": "bytes",
    "x-ms-type": "File",
    "x-ms-server-encrypted": "true",
  };
}

/** The `x-ms-content-*` / `x-ms-cache-control` properties that Create File and Set File Properties set. */
function httpPropertiesOf(req: ResponderRequest): StoredFile["http"] {
  return {
    contentType: req.header("x-ms-content-type"),
    contentEncoding: req.header("x-ms-content-encoding"),
    contentLanguage: req.header("x-ms-content-language"),
    cacheControl: req.header("x-ms-cache-control"),
    contentDisposition: req.header("x-ms-content-disposition"),
    contentMD5: req.header("x-ms-content-md5"),
  };
}

/** The file at `path`: 404 ParentNotFound when its directory is missing (recorded for Delete File), else ResourceNotFound. */
function requireFile(store: FilesStore, share: StoredShare, path: string): StoredFile {
  const entry = store.entry(share, path);
  if (entry?.kind === "file") return entry;
  requireParent(store, share, path);
  return fail(404, "ResourceNotFound", "The specified resource does not exist.");
}

/** The directory that holds `path` (which the caller knows exists). */
function parentOf(store: FilesStore, share: StoredShare, path: string): StoredDirectory {
  const parent = store.entry(share, path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");
  if (parent?.kind !== "directory") return fail(404, "ParentNotFound", "The specified parent path does not exist.");
  return parent;
}

function parseRange(header: string | undefined, needEnd: boolean): { start: number; end: number | undefined } {
  const match = header === undefined ? null : /^bytes=(\d+)-(\d*)$/.exec(header.trim());
  if (!match || (needEnd && match[2] === "")) {
    fail(
      400,
      "InvalidHeaderValue",
      `The range header is not valid (expected bytes=start-${needEnd ? "end" : "[end]"}): ${header ?? "(missing)"}.`,
    );
  }
  const start = Number(match[1]);
  const end = match[2] === "" ? undefined : Number(match[2]);
  if (end !== undefined && end < start)
    fail(416, "InvalidRange", "The range specified is invalid for the current size of the resource.");
  return { start, end };
}

function checkTransactionalMd5(req: ResponderRequest): void {
  const sent = req.header("content-md5");
  if (sent !== undefined && sent !== md5(req.body)) {
    fail(
      400,
      "Md5Mismatch",
      "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
    );
  }
}

function md5(data: Buffer): string {
  return createHash("md5").update(data).digest("base64");
}
