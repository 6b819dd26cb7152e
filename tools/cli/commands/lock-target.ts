/**
 * What a `lock show` / `lock break` acts on: a blob or container lease (`<container> [<blob>]`), a
 * file lease (`--file <share>/<path>`) or a share lease (`--share <share>`), read from the command
 * line before any request, and opened as a leasable over the user's connection.
 */
import type { Leasable } from "azure-storage-concurrency/lease";
import { shownArgument, stringFlag, UsageError, type Flags } from "../../internal/args.js";
import type { LockStorage } from "./lock-storage.js";

/** The thing whose lease a command inspects or breaks. */
export type LockTarget =
  | { readonly kind: "blob"; readonly containerName: string; readonly blobName: string }
  | { readonly kind: "container"; readonly containerName: string }
  | { readonly kind: "file"; readonly shareName: string; readonly directory: string; readonly fileName: string }
  | { readonly kind: "share"; readonly shareName: string };

/** Reads the target from the positionals after the action and the `--file` / `--share` flags. */
export function parseLockTarget(action: string, positional: readonly string[], flags: Flags): LockTarget {
  const file = stringFlag(flags, "file");
  const share = stringFlag(flags, "share");
  if (file === undefined && share === undefined) {
    const [containerName, blobName, ...extra] = positional;
    if (!containerName)
      throw new UsageError(`lock ${action} needs a container name, --file <share>/<path> or --share <share>`);
    if (extra.length > 0) throw new UsageError(`unexpected argument ${shownArgument(extra[0]!)}`);
    return blobName ? { kind: "blob", containerName, blobName } : { kind: "container", containerName };
  }
  if (file !== undefined && share !== undefined) throw new UsageError("use --file or --share, not both");
  if (positional.length > 0)
    throw new UsageError(
      `unexpected argument ${shownArgument(positional[0]!)} (the target is given by --${file ? "file" : "share"})`,
    );
  if (action === "list")
    throw new UsageError("lock list lists the locks in a container; for a file or a share use lock show");
  if (flags["azurite"]) {
    throw new UsageError(
      "--azurite has no Azure Files (Azurite does not emulate it): pass --connection-string or set AZURE_STORAGE_CONNECTION_STRING " +
        "to a real account, or to a Files responder's connection string (azure-storage-concurrency/testing)",
    );
  }
  if (share !== undefined) {
    if (share.includes("/"))
      throw new UsageError(
        `--share takes a share name, got ${shownArgument(share)} (for a file use --file <share>/<path>)`,
      );
    return { kind: "share", shareName: share };
  }
  const parts = file!.split("/").filter((part) => part.length > 0);
  if (parts.length < 2) throw new UsageError(`--file takes <share>/<path to the file>, got ${shownArgument(file!)}`);
  const [shareName, ...path] = parts;
  return {
    kind: "file",
    shareName: shareName!,
    directory: path.slice(0, -1).join("/"),
    fileName: path[path.length - 1]!,
  };
}

/** Opens the target's leasable on `storage` (the SDK it needs is loaded then). */
export async function openLockTarget(target: LockTarget, storage: LockStorage): Promise<Leasable> {
  if (target.kind === "file" || target.kind === "share") {
    const share = (await storage.shareService()).getShareClient(target.shareName);
    if (target.kind === "share") {
      const { shareLeasable } = await import("azure-storage-concurrency/lease");
      return shareLeasable(share);
    }
    const { fileLeasable } = await import("azure-storage-concurrency/lease");
    const directory = target.directory ? share.getDirectoryClient(target.directory) : share.rootDirectoryClient;
    return fileLeasable(directory.getFileClient(target.fileName));
  }
  const container = (await storage.blobService()).getContainerClient(target.containerName);
  if (target.kind === "container") {
    const { containerLeasable } = await import("azure-storage-concurrency/lease");
    return containerLeasable(container);
  }
  const { blobLeasable } = await import("azure-storage-concurrency/lease");
  return blobLeasable(container, target.blobName);
}
