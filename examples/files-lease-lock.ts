/**
 * Azure Files: a file lock (fileLock) guarding a read-modify-write, what happens when an operator
 * breaks it, and a share lock (shareLock) guarding the share's deletion.
 *
 * Azurite does not emulate Azure Files, so without AZURE_STORAGE_CONNECTION_STRING this runs against
 * the library's in-process Files REST responder (azure-storage-concurrency/testing); with a real
 * account it runs there, unchanged.
 */
import { ShareServiceClient, type ShareClient } from "@azure/storage-file-share";
import {
  fileCodecs,
  isFileLeaseConflictError,
  updateFileUnderLease,
  writeFileLastWriterWins,
  writeFileUnderLease,
} from "azure-storage-concurrency/files";
import { fileLock, isLeaseLostError, LOCK_METADATA, shareLock } from "azure-storage-concurrency/lease";
import { statusOf } from "azure-storage-concurrency/errors";
import { startFilesResponder } from "azure-storage-concurrency/testing";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Azure Files: file locks and share locks in the lease lock engine";

export async function main({ connectionString, azurite, log }: ExampleContext): Promise<void> {
  // No real account configured (the runner started Azurite): use the Files responder instead.
  const responder = azurite ? await startFilesResponder() : undefined;
  try {
    const shares = ShareServiceClient.fromConnectionString(responder?.connectionString ?? connectionString);
    const share = shares.getShareClient(`lock-demo-${Date.now()}`);
    await share.create();
    let deleted = false;
    try {
      await fileLocks(share, log);
      deleted = await shareLocks(share, log);
    } finally {
      if (!deleted) await share.delete();
    }
  } finally {
    await responder?.close();
  }
}

async function fileLocks(share: ShareClient, log: (message: string) => void): Promise<void> {
  const file = share.rootDirectoryClient.getFileClient("settings.json");
  await writeFileLastWriterWins(file, JSON.stringify({ retries: 1 }), { metadata: { team: "ops" } });
  const codec = fileCodecs.json<{ retries: number }>();

  // 1. A scoped lock: the file lease (infinite: the only kind files have) is released at the end,
  //    also on errors. No If-Match on Azure Files: the lease is the guard, and every write names it.
  const lock = fileLock(file, { holderName: "settings-updater", renewIntervalInMs: 500 });
  const { value } = await lock.withLock(async (handle) => {
    log(`took the file lock (fencing token ${handle.fencingToken}); its holder is recorded in the file's metadata`);
    return updateFileUnderLease(file, handle, (s) => ({ retries: s.retries + 1 }), { codec });
  });
  const metadata = (await file.getProperties()).metadata ?? {};
  log(
    `updated under the lock: retries = ${value.retries}; metadata keeps team=${metadata.team}, token ${metadata[LOCK_METADATA.fencingToken]}`,
  );

  // 2. `await using`: while held, writers without the lease are refused by the service.
  {
    await using handle = await lock.acquire();
    const intruder = await writeFileLastWriterWins(file, "{}").catch((error: unknown) => error);
    if (isFileLeaseConflictError(intruder)) log(`a writer without the lease: refused (${intruder.serviceCode})`);

    // 3. An operator breaks the lock (what `azure-storage-concurrency lock break --file` does).
    //    The service refuses the holder's writes at once; the holder's periodic check aborts its signal.
    await fileLock(file).break();
    const reason = await new Promise<unknown>((resolve) =>
      handle.abortSignal.aborted
        ? resolve(handle.abortSignal.reason)
        : handle.abortSignal.addEventListener("abort", () => resolve(handle.abortSignal.reason)),
    );
    if (isLeaseLostError(reason)) log(`the holder noticed at its next check: ${reason.reason}`);
    const late = await writeFileUnderLease(file, handle, JSON.stringify({ retries: 99 })).catch(
      (error: unknown) => error,
    );
    log(`its late write was not sent: ${late === reason ? "stopped by the lost lock" : String(late)}`);
  } // released here: nothing left to release, no error
  log(`the file still says retries = ${codec.decode(await file.downloadToBuffer()).retries}`);
}

async function shareLocks(share: ShareClient, log: (message: string) => void): Promise<boolean> {
  // 4. A share lease guards the share's deletion (15-60 s, renewed in the background, or infinite).
  return shareLock(share, { durationInSeconds: 15, holderName: "janitor" }).withLock(async (handle) => {
    const refused = await share.delete().catch((error: unknown) => error);
    log(`deleting the share without the lease id: refused (${statusOf(refused)})`);
    await share.delete({ leaseAccessConditions: { leaseId: handle.leaseId } });
    log("deleted the share under its lease (the lock's release then finds nothing to release)");
    return true;
  });
}

runIfMain(import.meta.url, { title, main });
