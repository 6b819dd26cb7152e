/**
 * Azure Files: last writer wins by default, a file lease as the only guard, and SMB clients that hold
 * files open.
 *
 * Azurite does not emulate Azure Files, so without AZURE_STORAGE_CONNECTION_STRING this runs against
 * the library's in-process Files REST responder (azure-storage-concurrency/testing), which also
 * simulates an SMB client. With a real account it runs the REST parts there and skips the SMB parts
 * (they need a real SMB client mounting the share).
 */
import { ShareServiceClient, type ShareFileClient } from "@azure/storage-file-share";
import {
  fileCodecs,
  isFileLeaseConflictError,
  isSmbConflictError,
  readFileContent,
  retryWhileSmbLocked,
  updateFileUnderLease,
  writeFileLastWriterWins,
  writeFileUnderLease,
} from "azure-storage-concurrency/files";
import { startFilesResponder, type FilesResponder } from "azure-storage-concurrency/testing";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "Azure Files: file leases, explicit last writer wins, SMB clients holding files";

export async function main({ connectionString, azurite, log }: ExampleContext): Promise<void> {
  // No real account configured (the runner started Azurite): use the Files responder instead.
  const responder: FilesResponder | undefined = azurite ? await startFilesResponder() : undefined;
  try {
    const shares = ShareServiceClient.fromConnectionString(responder?.connectionString ?? connectionString);
    const share = shares.getShareClient(`files-demo-${Date.now()}`);
    await share.create();
    try {
      await story(share.rootDirectoryClient.getFileClient("settings.json"), responder, log);
    } finally {
      await share.delete();
    }
  } finally {
    await responder?.close();
  }
}

async function story(
  file: ShareFileClient,
  responder: FilesResponder | undefined,
  log: (message: string) => void,
): Promise<void> {
  // 1. The REST API's default: last writer wins. The helper is named so that the choice shows.
  await writeFileLastWriterWins(file, JSON.stringify({ retries: 1 }), {
    httpProperties: { contentType: "application/json" },
  });
  log("wrote settings.json as last writer wins (no lease, no condition)");

  // 2. A file lease (infinite only) makes the service refuse every writer that does not name it.
  const lease = file.getShareLeaseClient();
  await lease.acquireLease(-1);
  try {
    const intruder = await writeFileLastWriterWins(file, "{}").catch((error: unknown) => error);
    if (isFileLeaseConflictError(intruder)) log(`another writer, without the lease: refused (${intruder.serviceCode})`);

    // 3. Read-modify-write under the lease: no If-Match on Azure Files, the lease is the guard.
    const codec = fileCodecs.json<{ retries: number }>();
    const { value, writeId } = await updateFileUnderLease(file, lease.leaseId, (s) => ({ retries: s.retries + 1 }), {
      codec,
    });
    log(
      `updated under the lease: retries = ${value.retries} (write id ${writeId?.slice(0, 8)}… recorded in the metadata)`,
    );
    await writeFileUnderLease(file, lease.leaseId, JSON.stringify({ retries: value.retries, note: "final" }));
  } finally {
    await lease.releaseLease();
  }

  if (!responder) {
    log("SMB parts skipped: they need an SMB client mounting the share (shown on the Files responder)");
    return;
  }

  // 4. An SMB client opens the file without sharing it: REST reads get 409 SharingViolation.
  //    retryWhileSmbLocked waits (the client may close the file soon), here until it does.
  const smb = responder.smb.openFile(`${file.shareName}/${file.path}`);
  let waits = 0;
  const read = await retryWhileSmbLocked(({ abortSignal }) => readFileContent(file, { abortSignal, smbRetry: false }), {
    onRetry: ({ classification }) => {
      waits += 1;
      if (waits === 2) smb.close(); // the SMB client closes the file
      log(`read refused: 409 ${classification.serviceCode}; waiting for the SMB client`);
    },
  });
  log(`read after the SMB client closed the file: ${read.content.toString()}`);

  // 5. An SMB client deletes the file while another handle is still open: every REST call gets
  //    409 DeletePending until the last handle closes; the preset gives up with a plain message.
  const first = responder.smb.openFile(`${file.shareName}/${file.path}`, {
    share: { read: true, write: true, delete: true },
  });
  const second = responder.smb.openFile(`${file.shareName}/${file.path}`, {
    share: { read: true, write: true, delete: true },
  });
  first.deleteOnClose();
  first.close();
  const error = await retryWhileSmbLocked(() => file.getProperties(), { deadlineInMs: 1_000 }).catch((e: unknown) => e);
  if (isSmbConflictError(error))
    log(
      `gave up after ${error.attempts} attempts: ${error.code} (409 ${error.serviceCode}), an SMB client still has it open`,
    );
  second.close();
  log(`after the last SMB handle closed, the file exists: ${await file.exists()}`);
}

runIfMain(import.meta.url, { title, main });
