/**
 * Share and directory operations of the Files responder. Each follows the REST reference page named
 * above it; what the responder does not emulate answers 501 NotImplementedByResponder.
 */
import { randomUUID } from "node:crypto";
import { applyLeaseAction, checkRead, checkWrite, leaseHeaders } from "./leases.js";
import {
  checkMetadata,
  fail,
  metadataHeaders,
  versionHeaders,
  type ResponderReply,
  type ResponderRequest,
} from "./protocol.js";
import {
  newShare,
  permissionKeyOf,
  smbDefaults,
  type FilesStore,
  type StoredDirectory,
  type StoredShare,
} from "./store.js";

/** Dispatches a request with `restype=share`. */
export function shareOperation(store: FilesStore, req: ResponderRequest): ResponderReply {
  const comp = req.query.get("comp");
  if (req.query.has("sharesnapshot") || comp === "snapshot") notImplemented("share snapshots");
  if (req.method === "PUT" && comp === null) return createShare(store, req);
  const share = requireShare(store, req);
  if (req.method === "PUT" && comp === "lease") return leaseShare(store, share, req);
  if (req.method === "PUT" && comp === "metadata") return setShareMetadata(store, share, req);
  if (req.method === "PUT" && comp === "properties") return setShareProperties(store, share, req);
  if (req.method === "PUT" && comp === "filepermission") return createPermission(req);
  if ((req.method === "GET" || req.method === "HEAD") && comp === null) return getShareProperties(store, share, req);
  if (req.method === "DELETE" && comp === null) return deleteShare(store, share, req);
  return notImplemented(`${req.method} on a share with comp=${comp ?? "(none)"}`);
}

/** Dispatches a request with `restype=directory`. */
export function directoryOperation(store: FilesStore, req: ResponderRequest): ResponderReply {
  const comp = req.query.get("comp");
  const share = requireShare(store, req);
  if (req.method === "PUT" && comp === null) return createDirectory(store, share, req);
  const directory = requireDirectory(store, share, req.path);
  if ((req.method === "GET" || req.method === "HEAD") && comp === null) {
    return {
      status: 200,
      headers: { ...versionHeaders(directory), ...metadataHeaders(directory.metadata), ...smbHeaders(directory) },
    };
  }
  if (req.method === "PUT" && comp === "metadata") {
    checkMetadata(req.metadata);
    directory.metadata = req.metadata;
    touch(store, directory);
    return { status: 200, headers: versionHeaders(directory) };
  }
  if (req.method === "DELETE" && comp === null) return deleteDirectory(store, share, req.path);
  return notImplemented(`${req.method} on a directory with comp=${comp ?? "(none)"}`);
}

// Create Share: https://learn.microsoft.com/rest/api/storageservices/create-share
// 201; 409 ShareAlreadyExists when the name is taken.
function createShare(store: FilesStore, req: ResponderRequest): ResponderReply {
  const name = req.shareName!;
  if (!/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/.test(name)) {
    fail(400, "InvalidResourceName", "The specifed resource name contains invalid characters.");
  }
  if (store.share(name)) fail(409, "ShareAlreadyExists", "The specified share already exists.");
  checkMetadata(req.metadata);
  const share = newShare(store, name, req.metadata, Number(req.header("x-ms-share-quota") ?? 5120));
  store.shares.set(name.toLowerCase(), share);
  return { status: 201, headers: versionHeaders(share) };
}

// Get Share Properties: https://learn.microsoft.com/rest/api/storageservices/get-share-properties
// Lease headers x-ms-lease-state/-status/-duration (version 2020-02-10 and later); an optional
// x-ms-lease-id must match the share's active lease.
function getShareProperties(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  throwRefusal(checkRead("share", share.lease, req.header("x-ms-lease-id"), store.now()));
  return {
    status: 200,
    headers: {
      ...versionHeaders(share),
      ...metadataHeaders(share.metadata),
      ...leaseHeaders(share.lease, store.now()),
      "x-ms-share-quota": String(share.quotaInGiB),
    },
  };
}

// Set Share Metadata: https://learn.microsoft.com/rest/api/storageservices/set-share-metadata
// A leased share refuses it without the lease id (recorded: 412 LeaseIdMissing; a wrong id 412
// LeaseIdMismatchWithContainerOperation), like Delete Share.
function setShareMetadata(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  throwRefusal(checkWrite("share", share.lease, req.header("x-ms-lease-id"), store.now()));
  checkMetadata(req.metadata);
  share.metadata = req.metadata;
  touch(store, share);
  return { status: 200, headers: versionHeaders(share) };
}

// Set Share Properties: https://learn.microsoft.com/rest/api/storageservices/set-share-properties
// (x-ms-lease-id: "Required if the destination file share has an active lease", version 2020-02-10
// and later). The responder keeps the quota only.
function setShareProperties(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  throwRefusal(checkWrite("share", share.lease, req.header("x-ms-lease-id"), store.now()));
  const quota = req.header("x-ms-share-quota");
  if (quota !== undefined) {
    const value = Number(quota);
    if (!Number.isSafeInteger(value) || value < 1) {
      fail(
        400,
        "InvalidHeaderValue",
        "The value for one of the HTTP headers is not in the correct format: x-ms-share-quota.",
      );
    }
    share.quotaInGiB = value;
  }
  touch(store, share);
  return { status: 200, headers: versionHeaders(share) };
}

// Create Permission: https://learn.microsoft.com/rest/api/storageservices/create-permission
// A JSON body `{ "permission": "<SDDL>" }`; 201 with the permission's key in x-ms-file-permission-key.
function createPermission(req: ResponderRequest): ResponderReply {
  let permission: unknown;
  try {
    permission = (JSON.parse(req.body.toString("utf8")) as { permission?: unknown }).permission;
  } catch {
    permission = undefined;
  }
  if (typeof permission !== "string" || permission.length === 0) {
    fail(400, "InvalidInput", "The request body must be a JSON object with a non-empty 'permission'.");
  }
  return { status: 201, headers: { "x-ms-file-permission-key": permissionKeyOf(permission) } };
}

// Delete Share: https://learn.microsoft.com/rest/api/storageservices/delete-share
// A leased share can only be deleted with its lease id ("The Lease Share operation establishes and
// manages a lock on a share for delete operations", lease-share); 202 Accepted.
function deleteShare(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  throwRefusal(checkWrite("share", share.lease, req.header("x-ms-lease-id"), store.now()));
  store.shares.delete(share.name.toLowerCase());
  store.dropHandlesUnder(share.name.toLowerCase());
  return { status: 202 };
}

// Lease Share: https://learn.microsoft.com/rest/api/storageservices/lease-share
function leaseShare(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  const outcome = applyLeaseAction("share", share.lease, leaseRequest(req), store.now(), randomUUID);
  if (!outcome.ok) fail(outcome.status, outcome.code, outcome.message);
  share.lease = outcome.lease;
  return { status: outcome.status, headers: { ...versionHeaders(share), ...outcome.headers } };
}

// Create Directory: https://learn.microsoft.com/rest/api/storageservices/create-directory
// 201; 409 ResourceAlreadyExists; 404 ParentNotFound when the parent directory is missing.
function createDirectory(store: FilesStore, share: StoredShare, req: ResponderRequest): ResponderReply {
  if (req.path === "") fail(409, "ResourceAlreadyExists", "The specified resource already exists.");
  if (store.entry(share, req.path)) fail(409, "ResourceAlreadyExists", "The specified resource already exists.");
  requireParent(store, share, req.path);
  checkMetadata(req.metadata);
  const name = req.path.split("/").pop()!;
  const directory: StoredDirectory = {
    kind: "directory",
    name,
    metadata: req.metadata,
    etag: store.nextEtag(),
    lastModified: store.now(),
    smb: smbDefaults(store, "Directory"),
  };
  share.entries.set(req.path.toLowerCase(), directory);
  return { status: 201, headers: { ...versionHeaders(directory), ...smbHeaders(directory) } };
}

// Delete Directory: https://learn.microsoft.com/rest/api/storageservices/delete-directory
// 202; 409 DirectoryNotEmpty while it holds files or directories.
function deleteDirectory(store: FilesStore, share: StoredShare, path: string): ResponderReply {
  if (path === "") fail(400, "InvalidUri", "The root directory of a share cannot be deleted.");
  const prefix = `${path.toLowerCase()}/`;
  for (const key of share.entries.keys()) {
    if (key.startsWith(prefix)) fail(409, "DirectoryNotEmpty", "The specified directory is not empty.");
  }
  share.entries.delete(path.toLowerCase());
  return { status: 202 };
}

/** The share of a request, or 404 ShareNotFound. */
export function requireShare(store: FilesStore, req: ResponderRequest): StoredShare {
  const share = req.shareName === undefined ? undefined : store.share(req.shareName);
  return share ?? fail(404, "ShareNotFound", "The specified share does not exist.");
}

/** The parent directory of `path` must exist: 404 ParentNotFound otherwise. */
export function requireParent(store: FilesStore, share: StoredShare, path: string): void {
  const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
  const entry = store.entry(share, parent);
  if (entry?.kind !== "directory") fail(404, "ParentNotFound", "The specified parent path does not exist.");
}

function requireDirectory(store: FilesStore, share: StoredShare, path: string): StoredDirectory {
  const entry = store.entry(share, path);
  if (entry?.kind !== "directory") fail(404, "ResourceNotFound", "The specified resource does not exist.");
  return entry;
}

/** The `x-ms-file-*` SMB property headers. */
export function smbHeaders(entry: { smb: StoredDirectory["smb"] }): Record<string, string> {
  return {
    "x-ms-file-attributes": entry.smb.attributes,
    "x-ms-file-creation-time": entry.smb.creationTime,
    "x-ms-file-last-write-time": entry.smb.lastWriteTime,
    "x-ms-file-change-time": entry.smb.changeTime,
    "x-ms-file-permission-key": entry.smb.permissionKey,
    "x-ms-file-id": entry.smb.fileId,
  };
}

/** The lease headers of a lease request. */
export function leaseRequest(req: ResponderRequest) {
  return {
    action: req.header("x-ms-lease-action"),
    leaseId: req.header("x-ms-lease-id"),
    proposedLeaseId: req.header("x-ms-proposed-lease-id"),
    duration: req.header("x-ms-lease-duration"),
    breakPeriod: req.header("x-ms-lease-break-period"),
  };
}

/** Throws a refusal returned by a lease check. */
export function throwRefusal(refusal: { status: number; code: string; message: string } | undefined): void {
  if (refusal) fail(refusal.status, refusal.code, refusal.message);
}

/** A new ETag and Last-Modified: the resource changed. */
export function touch(store: FilesStore, entry: { etag: string; lastModified: number }): void {
  entry.etag = store.nextEtag();
  entry.lastModified = store.now();
}

/** 501 for what the responder does not emulate. */
export function notImplemented(what: string): never {
  return fail(501, "NotImplementedByResponder", `The Files responder does not emulate ${what}.`);
}
