/**
 * The Files responder against what is known of the real service: every behaviour in
 * `./conformance/` (recorded answers of the service from the Azure SDK for JS's recordings, and
 * what the REST reference pages describe) is replayed as plain HTTP requests against a responder
 * on a hand-driven clock, and every answer (status, `x-ms-error-code`, lease and SMB headers, body)
 * must be the one expected. The suite counts how many behaviours each kind of source backs, and
 * checks that docs/azure-files.md and the README say the same.
 */
import { readFileSync } from "node:fs";
import { startFilesResponder, type FilesResponder } from "../../../src/testing/index.js";
import { describeResponderOnly } from "../../support/files.js";
import { DOCUMENTED } from "./conformance/documented.js";
import { RECORDED_FILES } from "./conformance/recorded-files.js";
import { RECORDED_LEASES } from "./conformance/recorded-leases.js";
import { replay } from "./conformance/replay.js";
import { backingOf, type Behaviour } from "./conformance/types.js";

const BEHAVIOURS: readonly Behaviour[] = [...RECORDED_LEASES, ...RECORDED_FILES, ...DOCUMENTED];

/** How many behaviours each kind of source backs, as the docs state it. */
function countsSentence(): string {
  const count = (kind: ReturnType<typeof backingOf>) => BEHAVIOURS.filter((b) => backingOf(b) === kind).length;
  return (
    `${BEHAVIOURS.length} behaviours: ${count("recording")} recording-backed, ${count("page")} page-backed, ` +
    `${count("unbacked")} unbacked`
  );
}

describeResponderOnly("Files responder conformance: recorded answers of the service and the REST pages", () => {
  let now = Date.UTC(2030, 0, 1, 12);
  let responder: FilesResponder;
  beforeAll(async () => {
    responder = await startFilesResponder({ now: () => now });
  });
  afterAll(async () => {
    await responder.close();
    console.log(`Files conformance: ${countsSentence()}.`);
  });

  it.each(BEHAVIOURS.map((behaviour) => [`${backingOf(behaviour)}: ${behaviour.name}`, behaviour] as const))(
    "%s",
    async (_title, behaviour) => {
      const target = { endpoint: responder.endpoint, smb: responder.smb, advance: (ms: number) => void (now += ms) };
      expect(await replay(behaviour, target)).toEqual([]);
    },
  );

  it("the facts are well formed: unique names, recordings under recordings/, pages on the REST reference", () => {
    expect(new Set(BEHAVIOURS.map((b) => b.name)).size).toBe(BEHAVIOURS.length);
    for (const { source } of BEHAVIOURS) {
      if ("recording" in source)
        expect(source.recording).toMatch(/^(node|browsers)\/[a-z_]+\/recording_[a-z0-9_]+\.json$/);
      if ("page" in source)
        expect(source.page).toMatch(/^https:\/\/learn\.microsoft\.com\/rest\/api\/storageservices\//);
    }
  });

  it("docs/azure-files.md and the README state the same counts", () => {
    const sentence = countsSentence();
    expect(readFileSync("docs/azure-files.md", "utf8")).toContain(sentence);
    expect(readFileSync("README.md", "utf8")).toContain(sentence);
  });
});
