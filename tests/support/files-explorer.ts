/**
 * What the Azure Files explorers (tests/integration/explorer/files*.test.ts) share: a Files responder
 * with a fault-placement explorer in front of it, clients through the faults (`viaFile`) and direct
 * (`direct`), a file seeded as a writer left it, and the file's stored state read directly.
 */
import { createHash } from "node:crypto";
import {
  FileSystemAttributes,
  ShareServiceClient,
  type ShareClient,
  type ShareFileClient,
} from "@azure/storage-file-share";
import { WRITE_ID_METADATA_KEY } from "../../src/files/index.js";
import { readStream } from "../../src/internal/stream.js";
import { createExplorer, violationsOf, type ExplorerRun, type Via } from "./explorer.js";
import { openFilesTarget, type FilesTarget } from "./files.js";

/** What the service stores for a file, read directly in one Get File. */
export interface StoredFile {
  readonly content: string;
  /** Lower-case names. */
  readonly metadata: Readonly<Record<string, string>>;
  readonly etag: string | undefined;
  readonly contentType: string | undefined;
  /** Whether the stored Content-MD5 matches the content (one request wrote both). */
  readonly md5Matches: boolean;
  readonly attributes: string | undefined;
  readonly permissionKey: string | undefined;
  readonly createdOn: number | undefined;
  readonly leaseState: string | undefined;
}

/** Metadata with lower-case names, sorted (for comparing). */
export function normalized(metadata: Readonly<Record<string, string>>, without: readonly string[] = []) {
  return Object.fromEntries(
    Object.entries(metadata)
      .map(([name, value]) => [name.toLowerCase(), value] as const)
      .filter(([name]) => !without.includes(name))
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

/** Starts a responder, a share on it and an explorer whose `"file"` proxy forwards to it. */
export async function openFilesExplorer(title: string) {
  const target: FilesTarget = await openFilesTarget();
  const share: ShareClient = await target.newShare("explore");
  const permissionKey = (await share.createPermission("O:BAG:SYD:(A;;FA;;;BA)(A;;FA;;;SY)")).filePermissionKey!;
  const explorer = await createExplorer(title, ["file"], { fileEndpoint: target.responder!.endpoint });
  const services = new Map<Via, ShareServiceClient>();
  let serial = 0;

  /** A share client through the explorer's faults. */
  const viaShare = (via: Via, shareName = share.name) => {
    let service = services.get(via);
    if (!service) {
      service = ShareServiceClient.fromConnectionString(via.connectionString, via.storageOptions);
      services.set(via, service);
    }
    return service.getShareClient(shareName);
  };
  const direct = (name: string): ShareFileClient => share.rootDirectoryClient.getFileClient(name);

  async function stored(name: string): Promise<StoredFile | undefined> {
    try {
      const response = await direct(name).download(0);
      const content = await readStream(response.readableStreamBody);
      const md5 = response.contentMD5 ?? response.fileContentMD5;
      return {
        content: content.toString("utf8"),
        metadata: normalized(response.metadata ?? {}),
        etag: response.etag,
        contentType: response.contentType,
        md5Matches: md5 !== undefined && Buffer.from(md5).equals(createHash("md5").update(content).digest()),
        attributes: response.fileAttributes,
        permissionKey: response.filePermissionKey,
        createdOn: response.fileCreatedOn?.getTime(),
        leaseState: response.leaseState,
      };
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return undefined;
      throw error;
    }
  }

  return {
    target,
    share,
    explorer,
    /** A fresh name: `prefix-<n>.json`. */
    nextName: (prefix: string) => `${prefix}-${(serial += 1)}.json`,
    direct,
    viaShare,
    /** A file client through the explorer's faults. */
    viaFile: (via: Via, name: string): ShareFileClient => viaShare(via).rootDirectoryClient.getFileClient(name),
    stored,
    /** Whether `leaseId` is the file's active lease (a HEAD naming it, read directly). */
    leaseHeldBy: (name: string, leaseId: string) =>
      direct(name)
        .getProperties({ leaseAccessConditions: { leaseId } })
        .then(
          () => true,
          () => false,
        ),
    /** A file as a writer left it: `{"n":5}`, user metadata, a content type and SMB properties of its own. */
    async seedFile(name: string, extraMetadata: Record<string, string> = {}): Promise<void> {
      const content = Buffer.from('{"n":5}');
      await direct(name).create(content.length, {
        content,
        contentLength: content.length,
        metadata: { owner: "ops", [WRITE_ID_METADATA_KEY]: "seed", ...extraMetadata },
        fileHttpHeaders: {
          fileContentType: "application/json",
          fileContentMD5: createHash("md5").update(content).digest(),
        },
        filePermissionKey: permissionKey,
        fileAttributes: FileSystemAttributes.parse("Hidden"),
        creationTime: new Date("2021-03-04T05:06:07.000Z"),
      });
    },
    async close(file: string): Promise<void> {
      await explorer.close(file);
      await target.close();
    },
  };
}

export type FilesExplorer = Awaited<ReturnType<typeof openFilesExplorer>>;

/** How many pairs each operation samples per SDK retry mode (`ASC_EXPLORE_PAIRS=all`: every pair). */
export const FILES_PAIRS = 6;

/** A test's time limit: every pair (ASC_EXPLORE_PAIRS=all) takes minutes. */
export const FILES_EXPLORER_TIMEOUT = process.env.ASC_EXPLORE_PAIRS === "all" ? 30 * 60_000 : 60_000;

/**
 * Every contract held, and no run ended "unknown": the Files helpers give the requests they make on
 * their own (the read-back of a write, a release) 3 attempts, so with at most two faults placed a
 * read could always decide the outcome.
 */
export function expectContractsKept(runs: readonly ExplorerRun[]): void {
  expect(violationsOf(runs)).toEqual([]);
  expect(runs.filter((r) => r.outcome === "unknown").map((r) => `${r.operation} [${r.faults}]: unknown`)).toEqual([]);
}
