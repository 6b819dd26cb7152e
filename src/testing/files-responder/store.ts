/**
 * The Files responder's in-memory account: shares, directories and files with their metadata,
 * properties and leases, and the SMB handles that a test opens to simulate an SMB client.
 *
 * Paths are case-insensitive and case-preserving, as on Azure Files
 * (https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-shares--directories--files--and-metadata).
 */
import { createHash } from "node:crypto";
import { AVAILABLE, type LeaseRecord } from "./leases.js";

/** Metadata as sent: names keep their case, lookups ignore it. */
export type Metadata = Map<string, { readonly name: string; readonly value: string }>;

/** The standard HTTP properties a file keeps (Create File / Set File Properties). */
interface FileHttpProperties {
  contentType?: string | undefined;
  contentEncoding?: string | undefined;
  contentLanguage?: string | undefined;
  cacheControl?: string | undefined;
  contentDisposition?: string | undefined;
  /** Base64 MD5 stored with `x-ms-content-md5`. */
  contentMD5?: string | undefined;
}

/** The SMB properties a file or directory reports (`x-ms-file-*`). */
interface SmbProperties {
  attributes: string;
  creationTime: string;
  lastWriteTime: string;
  changeTime: string;
  permissionKey: string;
  readonly fileId: string;
}

interface Entry {
  readonly name: string;
  metadata: Metadata;
  etag: string;
  lastModified: number;
  smb: SmbProperties;
}

/** A directory. */
export interface StoredDirectory extends Entry {
  readonly kind: "directory";
}

/** A file. */
export interface StoredFile extends Entry {
  readonly kind: "file";
  content: Buffer;
  http: FileHttpProperties;
  lease: LeaseRecord;
}

/** A share and everything in it. */
export interface StoredShare {
  readonly name: string;
  metadata: Metadata;
  etag: string;
  lastModified: number;
  quotaInGiB: number;
  lease: LeaseRecord;
  /** Directories and files by lower-cased path inside the share ("" is the root directory). */
  readonly entries: Map<string, StoredDirectory | StoredFile>;
}

/** What an SMB client opened a file for (its file access). */
export interface SmbAccess {
  /** Opened for reading. @default true */
  readonly read?: boolean;
  /** Opened for writing. @default true */
  readonly write?: boolean;
  /** Opened for deleting. @default false */
  readonly delete?: boolean;
}

/** Which later opens an SMB handle allows (its share mode). */
export interface SmbShareMode {
  /** Later reads of the file (SMB opens for read, REST reads) are allowed while the handle is open (`FileShare.Read`). @default false */
  readonly read?: boolean;
  /** Later writes of the file are allowed while the handle is open (`FileShare.Write`). @default false */
  readonly write?: boolean;
  /** Later deletes of the file are allowed while the handle is open (`FileShare.Delete`). @default false */
  readonly delete?: boolean;
}

/** One of the three kinds of access that SMB access and share modes speak of. */
export type SmbAccessKind = "read" | "write" | "delete";

/** An open SMB handle on a file. */
export interface OpenHandle {
  readonly id: number;
  readonly access: Readonly<Record<SmbAccessKind, boolean>>;
  readonly share: Readonly<Record<SmbAccessKind, boolean>>;
}

/** The account's state. */
export class FilesStore {
  readonly shares = new Map<string, StoredShare>();
  private readonly handles = new Map<string, OpenHandle[]>();
  /** Files an SMB client marked for deletion, pending until their last handle closes. */
  private readonly pendingDeletes = new Set<string>();
  private etagCounter: number;
  private idCounter = 1000;
  private handleCounter = 0;

  constructor(readonly now: () => number) {
    this.etagCounter = now();
  }

  /** A fresh ETag, quoted like the service's (`"0x8D…"`). */
  nextEtag(): string {
    this.etagCounter += 1;
    return `"0x${this.etagCounter.toString(16).toUpperCase().padStart(15, "8")}"`;
  }

  /** A fresh SMB file id. */
  nextFileId(): string {
    this.idCounter += 1;
    return String(this.idCounter);
  }

  /** Looks up a share by name. */
  share(name: string): StoredShare | undefined {
    return this.shares.get(name.toLowerCase());
  }

  /** Looks up an entry of a share by path. */
  entry(share: StoredShare, path: string): StoredDirectory | StoredFile | undefined {
    return share.entries.get(path.toLowerCase());
  }

  // SMB handles -----------------------------------------------------------------------------------

  /** Adds an SMB handle to a file (the checks are `./smb-rules.ts`'s). Returns its id. */
  addHandle(key: string, access: OpenHandle["access"], share: OpenHandle["share"]): number {
    const handle: OpenHandle = { id: ++this.handleCounter, access, share };
    this.handles.set(key, [...(this.handles.get(key) ?? []), handle]);
    return handle.id;
  }

  /** The SMB handles open on a file. */
  handlesOn(key: string): readonly OpenHandle[] {
    return this.handles.get(key) ?? [];
  }

  /** Marks a handle delete-on-close: the file is delete-pending until every handle closes. */
  markDeleteOnClose(key: string, id: number): void {
    if (this.handles.get(key)?.some((h) => h.id === id)) this.pendingDeletes.add(key);
  }

  /** Closes a handle; when the last one closes on a delete-pending file, the file is removed. */
  closeHandle(key: string, id: number, remove: () => void): void {
    const open = this.handles.get(key) ?? [];
    const handle = open.find((h) => h.id === id);
    if (!handle) return;
    const rest = open.filter((h) => h !== handle);
    if (rest.length > 0) {
      this.handles.set(key, rest);
      return;
    }
    this.handles.delete(key);
    if (this.pendingDeletes.delete(key)) remove();
  }

  /** How many SMB handles are open on a file. */
  openHandleCount(key: string): number {
    return this.handles.get(key)?.length ?? 0;
  }

  /** Whether an SMB client marked the file for deletion and still has it open. */
  isDeletePending(key: string): boolean {
    return this.pendingDeletes.has(key);
  }

  /** Forgets every handle under a share (the share was deleted). */
  dropHandlesUnder(shareKey: string): void {
    for (const key of [...this.handles.keys()]) if (key.startsWith(`${shareKey}/`)) this.handles.delete(key);
    for (const key of [...this.pendingDeletes]) if (key.startsWith(`${shareKey}/`)) this.pendingDeletes.delete(key);
  }
}

/** Creates an empty share. */
export function newShare(store: FilesStore, name: string, metadata: Metadata, quotaInGiB: number): StoredShare {
  const now = store.now();
  const share: StoredShare = {
    name,
    metadata,
    etag: store.nextEtag(),
    lastModified: now,
    quotaInGiB,
    lease: AVAILABLE,
    entries: new Map(),
  };
  share.entries.set("", {
    kind: "directory",
    name: "",
    metadata: new Map(),
    etag: store.nextEtag(),
    lastModified: now,
    smb: smbDefaults(store, "Directory"),
  });
  return share;
}

/** The permission key of a share's root directory (and of new directories): the service's `<number>*<number>` form. */
const DEFAULT_DIRECTORY_PERMISSION_KEY = "4088011009347960337*11581588750433322810";

/** Default SMB properties for a new file or directory, in the service's formats. */
export function smbDefaults(store: FilesStore, attributes: string): SmbProperties {
  const time = isoWith7Digits(store.now());
  return {
    attributes,
    creationTime: time,
    lastWriteTime: time,
    changeTime: time,
    permissionKey: DEFAULT_DIRECTORY_PERMISSION_KEY,
    fileId: store.nextFileId(),
  };
}

/** `2023-06-07T22:54:08.6338984Z`: the 7 fractional digits the service uses in `x-ms-file-*-time`. */
export function isoWith7Digits(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$10000Z");
}

/**
 * The permission key the responder gives a security descriptor: derived from its text, so that the
 * same descriptor always has the same key (Create Permission:
 * https://learn.microsoft.com/rest/api/storageservices/create-permission).
 */
export function permissionKeyOf(descriptor: string): string {
  const digest = createHash("sha256").update(descriptor).digest();
  return `${digest.readBigUInt64BE(0)}*11581588750433322810`;
}

/**
 * The permission key of a file or directory created with `x-ms-file-permission: inherit` (the
 * default) under a directory with `parentKey`: its own descriptor, inherited from the parent's
 * (the recordings show a file's key differing from its directory's).
 */
export function inheritedPermissionKey(parentKey: string): string {
  return permissionKeyOf(`inherited from ${parentKey}`);
}
