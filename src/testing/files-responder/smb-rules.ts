/**
 * What SMB clients' open handles let a FileREST call do, and what a file lease lets an SMB client
 * open: the rules of "Manage file locks"
 * (https://learn.microsoft.com/rest/api/storageservices/managing-file-locks), in one table.
 *
 * An SMB client opens a file with an access (read, write, delete) and a share mode (which accesses
 * later opens may have). A REST call is refused with 409 SharingViolation when an open handle's
 * share mode does not allow the access the call needs:
 *
 * | FileREST operation | refused unless every open handle shares |
 * | --- | --- |
 * | Get File | read |
 * | Get File Properties, Lease File break/release/change | (never refused) |
 * | Put Range, Set File Metadata, Set File Properties | write |
 * | Create File over an existing file | write and delete |
 * | Delete File | (refused while any handle is open) |
 * | Lease File acquire | read, write and delete, and no handle has write or delete access |
 *
 * The other way round, an SMB open with write or delete access fails on a leased file. Between SMB
 * clients the usual rule holds ("SMB client open file examples" on the same page): an open fails
 * when an earlier handle's share mode refuses its access, or its own share mode refuses an earlier
 * handle's access.
 */
import { fail } from "./protocol.js";
import type { FilesStore, OpenHandle, SmbAccess, SmbAccessKind, SmbShareMode } from "./store.js";

/** The file operations whose answer depends on SMB handles. */
export type SmbCheckedOperation =
  | "Get File"
  | "Get File Properties"
  | "Put Range"
  | "Set File Metadata"
  | "Set File Properties"
  | "Create File"
  | "Delete File"
  | "Lease File acquire"
  | "Lease File";

type Rule = { readonly share: readonly SmbAccessKind[] } | "no open handle" | "lease acquire";

const RULES: Readonly<Record<SmbCheckedOperation, Rule>> = {
  "Get File": { share: ["read"] },
  "Get File Properties": { share: [] },
  "Put Range": { share: ["write"] },
  "Set File Metadata": { share: ["write"] },
  "Set File Properties": { share: ["write"] },
  "Create File": { share: ["write", "delete"] },
  "Delete File": "no open handle",
  "Lease File acquire": "lease acquire",
  "Lease File": { share: [] },
};

/** Throws 409 SharingViolation when the file's open SMB handles refuse `operation`. */
export function checkSmbHandles(store: FilesStore, key: string, operation: SmbCheckedOperation): void {
  const handles = store.handlesOn(key);
  if (handles.length === 0) return;
  const rule = RULES[operation];
  const refused =
    rule === "no open handle"
      ? true
      : rule === "lease acquire"
        ? handles.some((h) => !sharesAll(h) || h.access.write || h.access.delete)
        : handles.some((h) => rule.share.some((kind) => !h.share[kind]));
  if (refused) {
    fail(
      409,
      "SharingViolation",
      `${operation}: the file is open by an SMB client whose access or share mode does not allow it.`,
    );
  }
}

/**
 * Thrown by the Files responder's `smb.openFile` when the simulated SMB open itself is refused (the
 * SMB client would see STATUS_SHARING_VIOLATION): write or delete access to a leased file, or an
 * access or share mode that conflicts with another open handle.
 *
 * @example
 * ```ts
 * import { startFilesResponder, SmbSharingViolationError } from "azure-storage-concurrency/testing";
 *
 * await using responder = await startFilesResponder();
 * // … create the share "reports" and the file q1.csv, and lease it through the REST API, then:
 * try {
 *   responder.smb.openFile("reports/q1.csv", { access: { read: true, write: true } });
 * } catch (error) {
 *   if (error instanceof SmbSharingViolationError) console.log("a leased file refuses SMB writers");
 * }
 * ```
 */
export class SmbSharingViolationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SmbSharingViolationError";
  }
}

/**
 * Opens an SMB handle on a file after the checks an SMB open meets: a leased file refuses write and
 * delete access, and open handles refuse what their share modes do not allow (and the reverse).
 */
export function openSmbHandle(
  store: FilesStore,
  key: string,
  options: { access?: SmbAccess | undefined; share?: SmbShareMode | undefined; leased: boolean },
): number {
  const access = {
    read: options.access?.read ?? true,
    write: options.access?.write ?? true,
    delete: options.access?.delete ?? false,
  };
  const share = {
    read: options.share?.read ?? false,
    write: options.share?.write ?? false,
    delete: options.share?.delete ?? false,
  };
  if (options.leased && (access.write || access.delete)) {
    throw new SmbSharingViolationError(
      `Cannot open '${key}' over SMB for ${access.write ? "write" : "delete"}: the file has a lease (STATUS_SHARING_VIOLATION).`,
    );
  }
  for (const open of store.handlesOn(key)) {
    const kinds: SmbAccessKind[] = ["read", "write", "delete"];
    const conflict = kinds.find((kind) => (access[kind] && !open.share[kind]) || (open.access[kind] && !share[kind]));
    if (conflict) {
      throw new SmbSharingViolationError(
        `Cannot open '${key}' over SMB: ${conflict} access conflicts with handle ${open.id}'s share mode or access (STATUS_SHARING_VIOLATION).`,
      );
    }
  }
  return store.addHandle(key, access, share);
}

function sharesAll(handle: OpenHandle): boolean {
  return handle.share.read && handle.share.write && handle.share.delete;
}
