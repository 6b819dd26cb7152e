/**
 * A file lock's acquisition (issue 14): the Files SDK's requests (acquire the file lease, read the
 * holder's record, write it) nest under the library's `asc.lock.acquire` span, as the blob lock's do.
 */
import type { ShareClient } from "@azure/storage-file-share";
import { fileLock } from "../../../src/lease/index.js";
import { writeFileLastWriterWins } from "../../../src/files/index.js";
import { ATTR, SPAN } from "../../../src/observability/names.js";
import { descendants, formatTraceTree, startTracing } from "../../../examples/support/tracing.js";
import { describeFiles, openFilesTarget, type FilesTarget } from "../../support/files.js";

const tracing = startTracing();
afterAll(() => tracing.stop());

describeFiles("file lock traces", () => {
  let target: FilesTarget;
  let share: ShareClient;
  beforeAll(async () => {
    target = await openFilesTarget();
    share = await target.newShare("otelflock");
  });
  afterAll(() => target.close());

  it("the Files SDK's requests nest under the acquisition's span", async () => {
    const file = share.rootDirectoryClient.getFileClient("report.json");
    await writeFileLastWriterWins(file, "{}");
    const handle = await fileLock(file, { holderName: "reporter" }).acquire();
    await handle.release();
    const spans = tracing.spans();
    const acquire = spans.find((s) => s.name === SPAN.lockAcquire);
    if (!acquire) throw new Error(`no acquisition span in:\n${formatTraceTree(spans)}`);
    expect(acquire.attributes).toMatchObject({ [ATTR.outcome]: "acquired", [ATTR.fencingToken]: 1 });
    const under = descendants(spans, acquire).map((s) => s.name);
    expect(under).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/acquireLease/),
        expect.stringMatching(/getProperties/),
        expect.stringMatching(/setMetadata/),
      ]),
    );
  });
});
