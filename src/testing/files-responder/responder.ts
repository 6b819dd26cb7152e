/**
 * A small in-process Azure Files REST responder for tests: Azurite does not emulate Azure Files, and
 * no open-source emulator does. The real `@azure/storage-file-share` client talks to it over HTTP
 * (path-style URLs, `http://127.0.0.1:<port>/devstoreaccount1/<share>/<dir>/<file>`), so tests
 * exercise the SDK's own request building and error parsing.
 *
 * It answers the operations this library uses, with the status codes, `x-ms-error-code` values and
 * lease states of the REST reference (each operation cites its page): Create/Get Properties/Set
 * Metadata/Delete/Lease Share, Create/Get Properties/Set Metadata/Delete Directory, Create File (with
 * or without content), Get File (whole or range), Get File Properties, Set File Metadata, Set File
 * Properties, Put Range (update and clear), Delete File and Lease File. Anything else answers 501
 * NotImplementedByResponder.
 *
 * Test hooks simulate what only an SMB client can do: {@link FilesResponder.smb} opens a file with an
 * access and a share mode (REST calls they refuse get 409 SharingViolation, as "Manage file locks"
 * tabulates it: see `./smb-rules.ts`; a leased file refuses SMB opens for write or delete) and marks
 * it delete-on-close (every REST call gets 409 DeletePending until the last handle closes, then 404).
 *
 * Not emulated: authentication (SharedKey and SAS are accepted without checking the signature),
 * listing, copies, snapshots, handles APIs, NFS, byte-range locks, and timing limits.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { AZURITE_ACCOUNT_NAME, buildConnectionString } from "../azurite.js";
import { fileOperation, handleKey } from "./file-operations.js";
import { readRequest, send, sendError, ServiceError, type ResponderRequest } from "./protocol.js";
import { directoryOperation, notImplemented, shareOperation } from "./share-operations.js";
import { isLeaseActive } from "./leases.js";
import { openSmbHandle } from "./smb-rules.js";
import { FilesStore, type SmbAccess, type SmbShareMode } from "./store.js";

/** Options for {@link startFilesResponder}. */
export interface FilesResponderOptions {
  /**
   * The account name in the path (`/<account>/<share>/...`); requests for another account get 400.
   * @default "devstoreaccount1"
   */
  readonly accountName?: string;
  /**
   * The clock, in milliseconds, that share lease durations and break periods run on. Tests pass a
   * hand-driven clock to expire a 15 s lease without waiting 15 s.
   * @default Date.now
   */
  readonly now?: () => number;
  /**
   * The `x-ms-error-code` of a file that an SMB client marked for deletion: `"DeletePending"` (the
   * current error-code table) or `"SMBDeletePending"` (the name in older documents).
   * @default "DeletePending"
   */
  readonly deletePendingErrorCode?: "DeletePending" | "SMBDeletePending";
}

/** Options for {@link SmbSimulator.openFile}. */
export interface SmbOpenOptions {
  /**
   * What the SMB client opens the file for. An open for write or delete fails on a leased file, and
   * while a handle has write or delete access, Lease File acquire fails with 409 SharingViolation.
   * @default { read: true, write: true, delete: false }
   */
  readonly access?: SmbAccess;
  /**
   * The handle's share mode: which later accesses it allows while open. The default shares nothing
   * (`FileShare.None`), which makes every REST read, write and delete of the file (and Lease File
   * acquire) fail with 409 SharingViolation; Get File Properties still answers.
   * @default { read: false, write: false, delete: false }
   */
  readonly share?: SmbShareMode;
}

/** An open SMB handle, simulated. */
export interface SmbHandle {
  /** The file, as `share/dir/file`. */
  readonly path: string;
  /** Whether {@link SmbHandle.close} was called. */
  readonly closed: boolean;
  /**
   * Marks the file for deletion when closed (an SMB delete): until every handle on it is closed,
   * every REST call on the file gets 409 DeletePending; after, the file is gone (404).
   */
  deleteOnClose(): void;
  /** Closes the handle. Safe to call more than once. */
  close(): void;
}

/** Test hooks that stand in for an SMB client holding files open. */
export interface SmbSimulator {
  /**
   * Opens `path` (`share/dir/file`) the way an SMB client would. Throws if the file does not exist,
   * and throws an `SmbSharingViolationError` when the open itself is refused: write or delete
   * access to a leased file, or an access or share mode that conflicts with another open handle.
   *
   * @example
   * ```ts
   * import { startFilesResponder } from "azure-storage-concurrency/testing";
   *
   * const responder = await startFilesResponder();
   * // … create the share "reports" and the file 2024/q1.csv through the REST API, then:
   * const smb = responder.smb.openFile("reports/2024/q1.csv"); // shares nothing
   * // REST reads and writes of the file now fail with 409 SharingViolation
   * smb.close();
   * ```
   */
  openFile(path: string, options?: SmbOpenOptions): SmbHandle;
  /** How many simulated SMB handles are open on `path`. */
  openHandleCount(path: string): number;
}

/** One request the responder answered. */
export interface FilesResponderRequest {
  /** `GET`, `PUT`, `HEAD`, `DELETE`, … */
  readonly method: string;
  /** Path and query, e.g. `/devstoreaccount1/share/file.txt?comp=lease`. */
  readonly url: string;
  /** The HTTP status answered. */
  readonly status: number;
  /** The `x-ms-error-code` answered, if any. */
  readonly errorCode: string | undefined;
}

/** A running responder, as returned by {@link startFilesResponder}. */
export interface FilesResponder extends AsyncDisposable {
  /** The file endpoint: `http://127.0.0.1:<port>/<account>`. */
  readonly endpoint: string;
  /** A connection string with `FileEndpoint=` set to {@link FilesResponder.endpoint}, for `ShareServiceClient.fromConnectionString`. */
  readonly connectionString: string;
  /** The account name it serves. */
  readonly accountName: string;
  /** SMB client simulation. */
  readonly smb: SmbSimulator;
  /** Every request answered since the start or the last {@link FilesResponder.clearLog}. */
  readonly requests: readonly FilesResponderRequest[];
  /** Forgets the request log. */
  clearLog(): void;
  /** Stops listening and closes every connection; resolves when done. Safe to call more than once. */
  close(): Promise<void>;
}

/**
 * Starts a Files REST responder on a free loopback port.
 *
 * @example
 * ```ts
 * import { ShareServiceClient } from "@azure/storage-file-share";
 * import { startFilesResponder } from "azure-storage-concurrency/testing";
 *
 * await using responder = await startFilesResponder();
 * const shares = ShareServiceClient.fromConnectionString(responder.connectionString);
 * const share = shares.getShareClient("reports");
 * await share.create();
 * const file = share.rootDirectoryClient.getFileClient("q1.csv");
 * await file.create(5, { content: Buffer.from("a,b,c"), contentLength: 5 });
 *
 * const smb = responder.smb.openFile("reports/q1.csv"); // an SMB client holds it, sharing nothing
 * await file.download().catch((e) => console.log(e.statusCode, e.code)); // 409 SharingViolation
 * smb.close();
 * ```
 */
export async function startFilesResponder(options: FilesResponderOptions = {}): Promise<FilesResponder> {
  const accountName = options.accountName ?? AZURITE_ACCOUNT_NAME;
  const store = new FilesStore(options.now ?? Date.now);
  const settings = { deletePendingCode: options.deletePendingErrorCode ?? "DeletePending" };
  const log: FilesResponderRequest[] = [];
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const record = (status: number, errorCode?: string) =>
      log.push({ method: req.method ?? "GET", url: req.url ?? "/", status, errorCode });
    try {
      const request = await readRequest(req, accountName);
      if (request === "wrong-account") {
        throw new ServiceError(400, "InvalidUri", `The Files responder serves the account '${accountName}' only.`);
      }
      const reply = route(store, settings, request);
      record(reply.status);
      send(req, res, reply);
    } catch (error) {
      const serviceError =
        error instanceof ServiceError
          ? error
          : new ServiceError(500, "InternalError", `The Files responder failed: ${String(error)}`);
      record(serviceError.status, serviceError.code);
      sendError(req, res, serviceError);
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  server.unref();

  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}/${accountName}`;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    }));

  return {
    endpoint,
    connectionString: buildConnectionString({ fileEndpoint: endpoint }).replace(
      /AccountName=[^;]*/,
      `AccountName=${accountName}`,
    ),
    accountName,
    smb: smbSimulator(store),
    get requests() {
      return log;
    },
    clearLog: () => void log.splice(0),
    close,
    [Symbol.asyncDispose]: close,
  };
}

function route(store: FilesStore, settings: { deletePendingCode: string }, req: ResponderRequest) {
  if (req.shareName === undefined) return notImplemented("account-level operations (list shares, service properties)");
  const restype = req.query.get("restype");
  if (restype === "share") return shareOperation(store, req);
  if (restype === "directory") return directoryOperation(store, req);
  if (restype !== null) return notImplemented(`restype=${restype}`);
  if (req.path === "") return notImplemented(`${req.method} on a share without restype=share`);
  return fileOperation(store, settings, req);
}

function smbSimulator(store: FilesStore): SmbSimulator {
  const resolve = (path: string) => {
    const [shareName, ...rest] = path.split("/").filter((s) => s.length > 0);
    const share = shareName === undefined ? undefined : store.share(shareName);
    const filePath = rest.join("/");
    const entry = share && store.entry(share, filePath);
    if (!share || entry?.kind !== "file")
      throw new Error(`The Files responder has no file '${path}' to open over SMB.`);
    return { share, filePath, key: handleKey(share, filePath), file: entry };
  };
  return {
    openFile(path, options = {}) {
      const { share, filePath, key, file } = resolve(path);
      const id = openSmbHandle(store, key, { ...options, leased: isLeaseActive(file.lease, store.now()) });
      let closed = false;
      return {
        path,
        get closed() {
          return closed;
        },
        deleteOnClose: () => store.markDeleteOnClose(key, id),
        close: () => {
          if (closed) return;
          closed = true;
          store.closeHandle(key, id, () => share.entries.delete(filePath.toLowerCase()));
        },
      };
    },
    openHandleCount(path) {
      try {
        return store.openHandleCount(resolve(path).key);
      } catch {
        return 0;
      }
    },
  };
}
