/**
 * Azurite (or, under `npm run test:live`, the real account) against what is known of the real
 * service, on exactly the requests the library depends on: every behaviour in `./conformance/`
 * (the service's answers recorded by the Azure SDKs' tests, and what the REST reference pages
 * describe) is sent as plain REST requests, and every answer (status, error code, the headers the
 * library reads, the body parts it parses) must be the one expected. Where Azurite is known to
 * answer otherwise, the fact records Azurite's answer and why it does not mislead the library;
 * those steps hold Azurite to its own answer, so that the suite notices when it changes.
 *
 * The behaviours run concurrently (the slow ones, which wait for a 15 s lease to expire, first), so
 * the suite takes about as long as its longest behaviour. It counts how many behaviours each kind
 * of source backs and checks that docs/service-conformance.md says the same.
 */
import { readFileSync } from "node:fs";
import { runPool } from "../../src/internal/pool.js";
import { connectionString, uniqueName } from "../support/storage.js";
import { restAccountOf } from "../support/storage-rest.js";
import { describeStorage, storageTarget } from "../support/target.js";
import { BEHAVIOURS, countsSentence } from "./conformance/index.js";
import { replay, type ReplayResult } from "./conformance/replay.js";
import { backingOf, type Behaviour } from "./conformance/types.js";

describeStorage(`Service conformance (${storageTarget}): recorded answers of the service and the REST pages`, () => {
  const results = new Map<string, ReplayResult>();
  let elapsedMs = 0;

  beforeAll(async () => {
    const account = restAccountOf(connectionString());
    const slowFirst = [...BEHAVIOURS].sort((a, b) => waitOf(b) - waitOf(a));
    const started = performance.now();
    const outcomes = await runPool(
      slowFirst.map((behaviour) => async () => {
        const names = { c: uniqueName("conf"), q: uniqueName("conf"), t: uniqueName("conf") };
        const result = await replay(behaviour, { account, kind: storageTarget, names }).catch(
          (error: unknown): ReplayResult => ({
            differences: [`threw ${String(error)}`],
            azuriteDifferences: 0,
            elapsedMs: 0,
          }),
        );
        return [behaviour.name, result] as const;
      }),
      16,
    );
    elapsedMs = performance.now() - started;
    for (const [name, result] of outcomes) results.set(name, result);
  }, 120_000);

  afterAll(() => {
    console.log(
      `Service conformance (${storageTarget}): ${countsSentence()}. ` +
        `${BEHAVIOURS.length} replayed in ${(elapsedMs / 1000).toFixed(1)} s.`,
    );
  });

  it.each(BEHAVIOURS.map((behaviour) => [`${backingOf(behaviour)}: ${behaviour.name}`, behaviour] as const))(
    "%s",
    (_title, behaviour) => {
      expect(results.get(behaviour.name)?.differences).toEqual([]);
    },
  );

  it("the facts are well formed: unique names, recordings with a commit, pages on the REST reference", () => {
    expect(new Set(BEHAVIOURS.map((b) => b.name)).size).toBe(BEHAVIOURS.length);
    for (const { source, steps } of BEHAVIOURS) {
      if ("recording" in source) {
        expect(source.recording.repo).toMatch(/^Azure\/azure-sdk-for-(js|python)$/);
        expect(source.recording.path).toMatch(/\/recordings\//);
        expect(source.recording.commit).toMatch(/^[0-9a-f]{40}$/);
      }
      if ("page" in source)
        expect(source.page).toMatch(/^https:\/\/learn\.microsoft\.com\/rest\/api\/storageservices\//);
      for (const step of steps) if (step.azurite) expect(step.azurite.why.length).toBeGreaterThan(20);
    }
  });

  it("docs/service-conformance.md and the README state the same counts", () => {
    expect(readFileSync("docs/service-conformance.md", "utf8")).toContain(countsSentence());
    expect(readFileSync("README.md", "utf8")).toContain(countsSentence());
  });
});

function waitOf(behaviour: Behaviour): number {
  return behaviour.steps.reduce((sum, step) => sum + (step.waitMs ?? 0), 0);
}
