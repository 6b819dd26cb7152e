/**
 * Several processes, one file: each increments a counter under the file's lock (fileLock, a file
 * lease). The lease is the only guard Azure Files offers (no If-Match), and it is enough: no
 * increment is lost, and every acquisition gets its own fencing token because every write under
 * the lock keeps the lock's record in the file's metadata.
 */
import type { ShareClient } from "@azure/storage-file-share";
import { fileCodecs, readFileContent, writeFileLastWriterWins } from "../../../src/files/index.js";
import { describeFiles, openFilesTarget, type FilesTarget } from "../../support/files.js";
import { spawnWorker } from "../../support/processes.js";

describeFiles("several processes writing one file under its lease", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("procs");
  });
  afterAll(() => target.close());

  it("3 processes x 8 increments under fileLock: the counter ends at 24, and the 24 acquisitions had tokens 1 to 24", async () => {
    const file = share.rootDirectoryClient.getFileClient("counter.json");
    await writeFileLastWriterWins(file, JSON.stringify({ n: 0 }));
    const workers = [1, 2, 3].map(() =>
      spawnWorker("tests/integration/files/workers/increment-under-lease.ts", [share.name, "counter.json", "8"], {
        FILES_CONNECTION_STRING: target.connectionString,
      }),
    );
    const exits = await Promise.all(workers.map((w) => w.exited));
    for (const [i, exit] of exits.entries()) {
      if (exit.code !== 0) throw new Error(`worker ${i} exited with ${exit.code}: ${workers[i]!.stderr()}`);
    }
    const results = workers.map((w) => w.messages[0] as { done: number; tokens: number[] });
    expect(results.map((r) => r.done)).toEqual([8, 8, 8]);
    expect(results.flatMap((r) => r.tokens).sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(fileCodecs.json<{ n: number }>().decode((await readFileContent(file)).content)).toEqual({ n: 24 });
    expect((await file.getProperties()).leaseState).toBe("available");
  }, 90_000);
});
