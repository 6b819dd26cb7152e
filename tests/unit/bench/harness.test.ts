/**
 * The harness's time limit (pure logic: scenarios here are fakes that talk to no storage). The same
 * limit seen from the command line, with `bench` on real Azurite: tests/integration/cli/bench.test.ts.
 */
import { runScenario, type BenchScenario } from "../../../tools/bench/harness.js";

/** Storage that records whether it was closed. */
function fakeStorage() {
  const storage = { closed: false };
  const connect = () =>
    Promise.resolve({
      connectionString: "UseDevelopmentStorage=true",
      embedded: true,
      close: () => {
        storage.closed = true;
        return Promise.resolve();
      },
    });
  return { storage, connect };
}

function scenario(run: BenchScenario["run"], timeLimitInSec = 0.2): BenchScenario {
  return {
    name: "fake",
    description: "a fake",
    flags: {},
    services: ["blob"],
    timeLimitInSec,
    loadSdks: () => Promise.resolve({}),
    run,
  };
}

describe("a scenario's time limit", () => {
  it("stops a scenario that runs past it, tells it through its signal, and reports why", async () => {
    const { storage, connect } = fakeStorage();
    const lines: string[] = [];
    let signalled = false;
    const never = scenario(
      ({ abortSignal }) =>
        new Promise((_, reject) =>
          abortSignal.addEventListener("abort", () => {
            signalled = true;
            reject(abortSignal.reason as Error);
          }),
        ),
    );
    const result = await runScenario(never, {}, {}, { connect, progress: (line) => lines.push(line) });
    expect(result).toMatchObject({
      scenario: "fake",
      target: "azurite",
      timedOut: true,
      timeLimitSec: 0.2,
      error: "ran past its time limit of 0.2 s and was stopped; its figures are left out",
    });
    expect(signalled).toBe(true);
    expect(storage.closed).toBe(true);
    expect(lines).toContain("[fake] ran past its time limit of 0.2 s and was stopped; its figures are left out");
  });

  it("closes the storage so that a scenario deaf to its signal stops too, and waits for its clean-up", async () => {
    const { storage, connect } = fakeStorage();
    let cleanedUp = false;
    const deaf = scenario(async () => {
      while (!storage.closed) await new Promise((resolve) => setTimeout(resolve, 10));
      cleanedUp = true;
      throw new Error("ECONNREFUSED");
    });
    const result = await runScenario(deaf, {}, {}, { connect, progress: () => {} });
    expect(result).toMatchObject({ timedOut: true });
    expect(cleanedUp).toBe(true);
  });

  it("lets a scenario that finishes in time report its figures, and a limit given on the command line wins", async () => {
    const { storage, connect } = fakeStorage();
    const slowish = scenario(() => new Promise((resolve) => setTimeout(() => resolve({ perSec: 12 }), 300)), 0.1);
    const result = await runScenario(slowish, {}, {}, { connect, progress: () => {}, timeLimitInSec: 5 });
    expect(result).toMatchObject({ scenario: "fake", target: "azurite", perSec: 12 });
    expect(result).not.toHaveProperty("error");
    expect(storage.closed).toBe(true);
  });

  it("passes a scenario's own error on", async () => {
    const { storage, connect } = fakeStorage();
    const failing = scenario(() => Promise.reject(new Error("setup failed")), 5);
    await expect(runScenario(failing, {}, {}, { connect, progress: () => {} })).rejects.toThrow("setup failed");
    expect(storage.closed).toBe(true);
  });
});
