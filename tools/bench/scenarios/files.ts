/**
 * `files`: read-modify-write of a JSON counter file under its file lease, raw SDK against the library,
 * with a reader polling the file meanwhile and (on the Files responder) a fault proxy dropping a
 * share of the write responses after the service applied them.
 *
 * - raw: what the SDK invites: download, then `create(size)` + `uploadRange` under the lease (what
 *   `uploadData` does for a small file); on a failure, the whole read-modify-write is tried again.
 *   The responses dropped are those of its last write (Put Range).
 * - library: `updateFileUnderLease` (one Create File with content and a write id); on a failure
 *   that it reports (it confirmed the write was not applied), the same retry. The responses dropped
 *   are those of its write (Create File).
 * - locked: each increment takes the file's lock itself, `fileLock(file).withLock(h =>
 *   updateFileUnderLease(file, h, ...))`: what a process that locks per update pays (the lease, the
 *   lock's record in the metadata, the release) on top of the library's write. Same faults.
 * Both use SDK clients that make one attempt per call, so that the caller's loop is the only retry.
 *
 * Reported: the counter's final value against the increments each loop reported (a lost response
 * retried blindly counts twice), requests per increment, and how many of the reader's reads found a
 * half-written file (not valid JSON: the window between Create File and Put Range).
 *
 * Azurite has no Azure Files: on an embedded Azurite the scenario runs on the library's Files
 * responder instead (with faults); on a real account, on its Files service (without faults).
 */
import type { ShareFileClient, ShareServiceClient } from "@azure/storage-file-share";
import {
  fileCodecs,
  readFileContent,
  updateFileUnderLease,
  writeFileLastWriterWins,
} from "azure-storage-concurrency/files";
import { fileLock } from "azure-storage-concurrency/lease";
import { classifyError, SDK_SINGLE_ATTEMPT } from "azure-storage-concurrency/retry";
import { numberFlag } from "../../internal/args.js";
import { importSdk } from "../../internal/sdk.js";
import {
  buildConnectionString,
  createFaultProxy,
  seededRandom,
  startFilesResponder,
  type FaultProxy,
} from "azure-storage-concurrency/testing";
import { round, type BenchScenario } from "../harness.js";

interface Outcome {
  finalValue: number;
  reportedIncrements: number;
  requestsPerIncrement: number;
  tornReads: number;
  reads: number;
  ms: number;
}

const codec = fileCodecs.json<{ n: number }>();

async function rawIncrement(file: ShareFileClient, leaseId: string): Promise<void> {
  const download = await file.downloadToBuffer(0, undefined, { leaseAccessConditions: { leaseId } });
  const body = Buffer.from(JSON.stringify({ n: (JSON.parse(download.toString("utf8")) as { n: number }).n + 1 }));
  await file.create(body.length, { leaseAccessConditions: { leaseId } });
  await file.uploadRange(body, 0, body.length, { leaseAccessConditions: { leaseId } });
}

async function libraryIncrement(file: ShareFileClient, leaseId: string): Promise<void> {
  await updateFileUnderLease(file, leaseId, (c) => ({ n: c.n + 1 }), { codec, smbRetry: false });
}

/** Takes the lock per increment (so `measure` holds no lease around the loop). */
async function lockedIncrement(file: ShareFileClient): Promise<void> {
  await fileLock(file).withLock((handle) =>
    updateFileUnderLease(file, handle, (c) => ({ n: c.n + 1 }), { codec, smbRetry: false }),
  );
}

async function measure(
  direct: ShareFileClient,
  flaky: ShareFileClient,
  increments: number,
  countRequests: () => number,
  step: (file: ShareFileClient, leaseId: string) => Promise<void>,
  { locksItself = false } = {},
): Promise<Outcome> {
  await writeFileLastWriterWins(direct, JSON.stringify({ n: 0 }));
  const lease = direct.getShareLeaseClient();
  if (!locksItself) await lease.acquireLease(-1);
  let reading = true;
  let reads = 0;
  let tornReads = 0;
  const reader = (async () => {
    while (reading) {
      // One Get File per read (readFileContent): the SDK's downloadToBuffer reads the size first and
      // then the range, which tears by itself when the content's length changes in between.
      const text = (await readFileContent(direct, { smbRetry: false }).catch(() => undefined))?.content.toString(
        "utf8",
      );
      if (text === undefined) continue;
      reads += 1;
      try {
        JSON.parse(text);
      } catch {
        tornReads += 1;
      }
    }
  })();
  const before = countRequests();
  const started = performance.now();
  let reported = 0;
  try {
    while (reported < increments) {
      try {
        await step(flaky, lease.leaseId);
        reported += 1;
      } catch (error) {
        if (!classifyError(error).transient) throw error;
      }
    }
  } finally {
    reading = false;
    await reader;
    if (!locksItself) await lease.releaseLease();
  }
  const ms = performance.now() - started;
  const finalValue = codec.decode(await direct.downloadToBuffer()).n;
  return {
    finalValue,
    reportedIncrements: reported,
    requestsPerIncrement: round((countRequests() - before) / increments),
    tornReads,
    reads,
    ms: round(ms, 0),
  };
}

export const filesScenario: BenchScenario<typeof import("@azure/storage-file-share")> = {
  name: "files",
  description:
    "read-modify-write under a file lease: raw SDK (create + put range, blind retry) vs updateFileUnderLease, and fileLock per update, with lost responses and a reader",
  flags: {
    "--increments <n>": "increments per way (default 40)",
    "--drop <share>": "share of write responses dropped, on the Files responder only (default 0.1, at most 0.9)",
  },
  services: ["file"],
  loadSdks: () => importSdk(() => import("@azure/storage-file-share"), "@azure/storage-file-share"),
  async run({ connectionString, embedded, args, log }, { ShareServiceClient }) {
    const increments = Math.floor(numberFlag(args, "increments", 40, 1));
    const drop = Math.min(numberFlag(args, "drop", 0.1, 0), 0.9);
    const account = embedded ? undefined : connectionString;
    const responder = account ? undefined : await startFilesResponder();
    let proxy: FaultProxy | undefined;
    try {
      proxy = responder ? await createFaultProxy({ target: responder.endpoint, random: seededRandom(42) }) : undefined;
      const direct = ShareServiceClient.fromConnectionString(account ?? responder!.connectionString);
      const flaky = ShareServiceClient.fromConnectionString(
        proxy ? buildConnectionString({ fileEndpoint: proxy.endpoint }) : account!,
        {
          retryOptions: SDK_SINGLE_ATTEMPT.storage,
        },
      );
      // The response of each loop's *last* write is the one dropped: raw's Put Range, the library's Create File.
      const dropResponsesOf = (path: RegExp) => {
        proxy?.clearRules();
        if (drop > 0) proxy?.addRule({ method: "PUT", path, probability: drop, action: { type: "dropResponse" } });
      };
      log(
        responder ? `Files responder, ${drop * 100}% of write responses dropped` : "real account: no faults injected",
      );
      const shareName = `bench-files-${Date.now()}`;
      await direct.getShareClient(shareName).create();
      try {
        const file = (s: ShareServiceClient) =>
          s.getShareClient(shareName).rootDirectoryClient.getFileClient("counter.json");
        const count = () => proxy?.requests.length ?? Number.NaN;
        dropResponsesOf(/counter\.json\?comp=range$/);
        const raw = await measure(file(direct), file(flaky), increments, count, rawIncrement);
        log(
          `raw: counter ${raw.finalValue} for ${raw.reportedIncrements} increments, ${raw.tornReads}/${raw.reads} reads torn`,
        );
        dropResponsesOf(/counter\.json$/);
        const library = await measure(file(direct), file(flaky), increments, count, libraryIncrement);
        log(
          `library: counter ${library.finalValue} for ${library.reportedIncrements} increments, ${library.tornReads}/${library.reads} reads torn`,
        );
        const locked = await measure(file(direct), file(flaky), increments, count, lockedIncrement, {
          locksItself: true,
        });
        log(
          `locked: counter ${locked.finalValue} for ${locked.reportedIncrements} increments, ${locked.tornReads}/${locked.reads} reads torn`,
        );
        return {
          filesTarget: responder ? "files-responder" : "account",
          increments,
          dropProbability: responder ? drop : 0,
          raw,
          library,
          locked,
          rawExtraIncrements: raw.finalValue - raw.reportedIncrements,
          libraryExtraIncrements: library.finalValue - library.reportedIncrements,
          lockedExtraIncrements: locked.finalValue - locked.reportedIncrements,
        };
      } finally {
        await direct.getShareClient(shareName).delete();
      }
    } finally {
      await proxy?.close();
      await responder?.close();
    }
  },
};
