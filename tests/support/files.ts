/**
 * Where the Azure Files suite runs. Azurite does not emulate Azure Files, so by default every Files
 * test starts the library's in-process Files REST responder and talks to it through the real
 * `@azure/storage-file-share` client over HTTP. `npm run test:live` (ASC_FILES_TARGET=live) runs the
 * same tests against the account in AZURE_STORAGE_CONNECTION_STRING instead, and skips them (saying
 * so) when that variable names no real account. Tests that need what only the responder offers (a
 * simulated SMB client, a hand-driven clock, a fault proxy over plain HTTP) use
 * `describeResponderOnly` and are skipped live.
 */
import { ShareServiceClient, type ShareClient, type StoragePipelineOptions } from "@azure/storage-file-share";
import { startFilesResponder, type FilesResponder, type FilesResponderOptions } from "../../src/testing/index.js";
import { quickSdkRetries, uniqueName } from "./storage.js";

/** `"live"` under `npm run test:live`, else `"responder"`. */
export const filesTargetKind: "live" | "responder" = process.env.ASC_FILES_TARGET === "live" ? "live" : "responder";

/** The real account's connection string, when AZURE_STORAGE_CONNECTION_STRING names one (not Azurite's). */
export function liveConnectionString(): string | undefined {
  const value = process.env.AZURE_STORAGE_CONNECTION_STRING?.trim();
  if (!value || /UseDevelopmentStorage=true|AccountName=devstoreaccount1\b|127\.0\.0\.1|localhost/i.test(value))
    return undefined;
  return value;
}

/** True when the Files suite is asked to run live but has no account to run on. */
export const filesSuiteSkipped = filesTargetKind === "live" && liveConnectionString() === undefined;

/** `describe` for the Files suite: on the responder, or live; skipped when live has no account. */
export const describeFiles: typeof describe = filesSuiteSkipped ? describe.skip : describe;

/** `describe` for tests that need the responder's hooks: skipped live. */
export const describeResponderOnly: typeof describe = filesTargetKind === "live" ? describe.skip : describe;

/** A place to run Files tests: a fresh responder, or the live account. */
export interface FilesTarget {
  readonly kind: "live" | "responder";
  readonly connectionString: string;
  /** The responder, when not live. */
  readonly responder: FilesResponder | undefined;
  /** A share service client with quick SDK retries (and any other pipeline options). */
  shares(options?: StoragePipelineOptions): ShareServiceClient;
  /** Creates a share with a unique name; {@link FilesTarget.close} deletes it. */
  newShare(prefix: string): Promise<ShareClient>;
  /** Deletes the shares made by {@link FilesTarget.newShare} and stops the responder. */
  close(): Promise<void>;
}

/** Opens the Files target of this run. */
export async function openFilesTarget(options: FilesResponderOptions = {}): Promise<FilesTarget> {
  const live = filesTargetKind === "live" ? liveConnectionString() : undefined;
  if (filesTargetKind === "live" && !live)
    throw new Error("The live Files suite has no account (AZURE_STORAGE_CONNECTION_STRING).");
  const responder = live ? undefined : await startFilesResponder(options);
  const connectionString = live ?? responder!.connectionString;
  const created: ShareClient[] = [];
  const shares = (pipeline: StoragePipelineOptions = {}) =>
    ShareServiceClient.fromConnectionString(connectionString, { retryOptions: quickSdkRetries.storage, ...pipeline });
  return {
    kind: live ? "live" : "responder",
    connectionString,
    responder,
    shares,
    async newShare(prefix) {
      const share = shares().getShareClient(uniqueName(prefix).slice(0, 40));
      await share.create();
      created.push(share);
      return share;
    },
    async close() {
      for (const share of created) {
        // A share lease left behind by a failed test would block the delete: break it at once first
        // (the SDK passes `breakPeriod` through to x-ms-lease-break-period, though its type omits it).
        await share
          .getShareLeaseClient()
          .breakLease({ breakPeriod: 0 } as never)
          .catch(() => undefined);
        await share.deleteIfExists().catch(() => undefined);
      }
      await responder?.close();
    },
  };
}
