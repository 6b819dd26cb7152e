/**
 * Which storage the load-generating commands (`stress`, `bench`) run on: an embedded Azurite unless
 * the account is named on the command line, even with AZURE_STORAGE_CONNECTION_STRING exported (as
 * most Azure developers have it), and the first line of output says which.
 */
import type { PartitionStressResult } from "../../../tools/index.js";
import { spawnWorker } from "../../support/processes.js";
import { connectionString, endpoints } from "../../support/storage.js";

/** Runs the tool with the test Azurite exported as the user's account. */
async function cli(args: readonly string[]) {
  const run = spawnWorker("tools/cli/main.ts", args, { AZURE_STORAGE_CONNECTION_STRING: connectionString() });
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`${args.join(" ")} exited with ${code}:\n${run.stderr()}`);
  return {
    last: JSON.parse(run.lines.at(-1)!) as Record<string, unknown>,
    stdout: run.lines.join("\n"),
    stderr: run.stderr(),
  };
}

const EMBEDDED =
  "target: an embedded Azurite, started for this run (AZURE_STORAGE_CONNECTION_STRING is set, and not used: add --use-env to run against that account)";
const tiny = ["--designs", "single", "--duration", "0.5", "--preload", "5", "--workers", "1", "--json"];
// No Azure-like second pass (--round-trip-ms 0): it repeats every race through a 10 ms proxy.
const tinyRetry = ["retry", "--writers", "1", "--increments", "2", "--rounds", "1", "--round-trip-ms", "0", "--json"];

describe("targets of the load-generating commands", () => {
  it("stress runs on an embedded Azurite by default, though AZURE_STORAGE_CONNECTION_STRING is set", async () => {
    const { last, stderr } = await cli(["stress", ...tiny]);
    expect(stderr.split("\n")[0]).toBe(EMBEDDED);
    const result = last as unknown as PartitionStressResult;
    expect(result.emulator).toBe(true);
    expect(result.endpoint.startsWith(endpoints().table)).toBe(false);
  }, 60_000);

  it("stress runs on the exported account with --use-env, and says so first", async () => {
    const { last, stderr } = await cli(["stress", "--use-env", ...tiny]);
    expect(stderr.split("\n")[0]).toBe(
      `target: account 'devstoreaccount1' (${endpoints().table}), from AZURE_STORAGE_CONNECTION_STRING`,
    );
    expect((last as unknown as PartitionStressResult).endpoint.startsWith(endpoints().table)).toBe(true);
  }, 60_000);

  it("bench runs on an embedded Azurite by default, and on the account with --use-env", async () => {
    const embedded = await cli(["bench", ...tinyRetry]);
    expect(embedded.stderr.split("\n")[0]).toBe(EMBEDDED);
    expect(embedded.last).toMatchObject({ scenario: "retry", target: "azurite" });

    const account = await cli(["bench", "--use-env", ...tinyRetry]);
    expect(account.stderr.split("\n")[0]).toBe(
      `target: account 'devstoreaccount1' (${endpoints().blob}), from AZURE_STORAGE_CONNECTION_STRING`,
    );
    expect(account.last).toMatchObject({ scenario: "retry", target: "account" });
  }, 90_000);

  it("bench lock with a single contender reports no handoffs, never NaN", async () => {
    const { last, stdout, stderr } = await cli([
      "bench",
      "lock",
      "--use-env",
      "--processes",
      "1",
      "--contenders",
      "1",
      "--seconds",
      "1",
      ...["--scale", "0", "--latency", "0", "--list-locks", "0"],
      "--json",
    ]);
    expect(`${stdout}\n${stderr}`).not.toMatch(/NaN/);
    expect(stderr).toMatch(/^\[lock\] library: no handoffs \(no release while another contender waited\)/m);
    expect(last).toMatchObject({ scenario: "lock", handoffs: 0, handoffMedianMs: null, handoffP90Ms: null });
    expect(last["acquisitions"]).toBeGreaterThan(0);
  }, 60_000);
});
