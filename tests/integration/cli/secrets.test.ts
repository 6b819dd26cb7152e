/**
 * No secret in any output, file or process list (issue 13): every command of the tool runs on an
 * account whose key only this test knows (an Azurite serving an extra account), with a connection
 * string holding that key and one holding a SAS whose signature is known, in succeeding and failing
 * runs. Neither the key nor a signature (raw or percent-encoded) may appear in stdout, stderr, any
 * file the run writes (reports, charts, JSON, temporary files: TMPDIR points into the run's
 * folder), or the command line of the tool's child processes (bench workers), sampled from /proc
 * while the run lasts. */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AccountSASPermissions,
  AccountSASResourceTypes,
  AccountSASServices,
  generateAccountSASQueryParameters,
  StorageSharedKeyCredential,
} from "@azure/storage-blob";
import { blobLock } from "../../../src/lease/index.js";
import { startAzurite, type RunningAzurite } from "../../../src/testing/index.js";
import { spawnBenchWorker } from "../../../tools/bench/workers.js";
import { spawnWorker } from "../../support/processes.js";
import { blobService, uniqueName } from "../../support/storage.js";

const ACCOUNT = "secretacct";
const KEY = randomBytes(32).toString("base64");
const WRONG_KEY = randomBytes(32).toString("base64");

/** The command lines of `root` and every process below it, by pid. */
function processTree(root: number): Map<number, string> {
  const parents = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ")".
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // the process ended meanwhile
    }
  }
  const tree = new Map<number, string>();
  const visit = (pid: number) => {
    try {
      tree.set(pid, readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" "));
    } catch {
      return;
    }
    for (const [child, parent] of parents) if (parent === pid) visit(child);
  };
  visit(root);
  return tree;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The files the run wrote in its own folder, relative to it. */
  readonly written: readonly string[];
  /** Those files and the ones in TMPDIR, by path. */
  readonly files: ReadonlyMap<string, string>;
  /** The command lines seen below the tool's own process (and its own, unless it holds a secret by the caller's choice). */
  readonly commandLines: readonly string[];
}

describe("no secret in any output, file or process list", () => {
  let azurite: RunningAzurite;
  let root: string;
  let temp: string;
  let keyString: string;
  let sasString: string;
  let readOnlySasString: string;
  let unreachable: string;
  let wrongKey: string;
  let signatures: string[];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "asc-secrets-"));
    temp = join(root, "tmp");
    await mkdir(temp);
    azurite = await startAzurite({ accounts: [{ name: ACCOUNT, key: KEY }] });
    const at = (endpoint: string) => endpoint.replace(/devstoreaccount1$/, ACCOUNT);
    const endpoints = `BlobEndpoint=${at(azurite.blobEndpoint)};QueueEndpoint=${at(azurite.queueEndpoint)};TableEndpoint=${at(azurite.tableEndpoint)}`;
    keyString = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};${endpoints}`;
    wrongKey = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${WRONG_KEY};${endpoints}`;
    unreachable = `DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=http://127.0.0.1:1/${ACCOUNT};TableEndpoint=http://127.0.0.1:1/${ACCOUNT}`;
    const sas = (permissions: string) =>
      generateAccountSASQueryParameters(
        {
          expiresOn: new Date(Date.now() + 3_600_000),
          permissions: AccountSASPermissions.parse(permissions),
          services: AccountSASServices.parse("bqt").toString(),
          resourceTypes: AccountSASResourceTypes.parse("sco").toString(),
        },
        new StorageSharedKeyCredential(ACCOUNT, KEY),
      );
    const full = sas("rwdlacup");
    const readOnly = sas("rl");
    signatures = [full.signature, readOnly.signature];
    sasString = `${endpoints};SharedAccessSignature=${full.toString()}`;
    readOnlySasString = `${endpoints};SharedAccessSignature=${readOnly.toString()}`;
  }, 60_000);

  afterAll(async () => {
    await azurite?.stop();
    await rm(root, { recursive: true, force: true });
  });

  /** The secrets, in every form they could take in text. */
  const secrets = () =>
    [KEY, WRONG_KEY, ...signatures].flatMap((s) => [
      s,
      encodeURIComponent(s),
      encodeURIComponent(encodeURIComponent(s)),
    ]);

  /**
   * Runs the tool with `connectionString` in its environment (the way the documentation asks) and
   * `args` (given a folder of its own for the files it writes); samples its process tree meanwhile.
   * Afterwards reads every file in that folder and in TMPDIR (shared by the runs of this file, so
   * that tsx's compile cache there stays warm; the cache is read too).
   */
  async function run(
    connectionString: string,
    args: (dir: string) => readonly string[],
    { ownCommandLineHasSecret = false } = {},
  ): Promise<Run> {
    const dir = await mkdtemp(join(root, "run-"));
    const child = spawnWorker("tools/cli/main.ts", args(dir), {
      AZURE_STORAGE_CONNECTION_STRING: connectionString,
      TMPDIR: temp,
    });
    const pid = child.child.pid!;
    // Every command line seen, once per process (an exiting process reads as empty: keep what it was).
    const commandLines = new Map<number, Set<string>>();
    // Between fork() and exec(), a child of the tool reads with the tool's own command line: when
    // that one holds a secret by the caller's choice, such a copy shows nothing new (and on a busy
    // machine the sampler does catch it).
    let own: string | undefined;
    const sample = () => {
      for (const [seen, line] of processTree(pid)) {
        if (seen === pid) own ??= line;
        if (line === "" || (ownCommandLineHasSecret && (seen === pid || line === own))) continue;
        commandLines.set(seen, (commandLines.get(seen) ?? new Set()).add(line));
      }
    };
    const sampler = setInterval(sample, 20);
    sample();
    const { code } = await child.exited.finally(() => clearInterval(sampler));
    const files = new Map<string, string>();
    for (const file of [...(await filesUnder(dir)), ...(await filesUnder(temp))])
      files.set(file, await readFile(file, "utf8"));
    return {
      code,
      stdout: child.lines.join("\n"),
      stderr: child.stderr(),
      written: (await filesUnder(dir)).map((file) => file.slice(dir.length + 1)).sort(),
      files,
      commandLines: [...commandLines.values()].flatMap((lines) => [...lines]),
    };
  }

  function expectNoSecret(result: Run): void {
    const places: [string, string][] = [
      ["stdout", result.stdout],
      ["stderr", result.stderr],
      ...[...result.files].map(([file, text]): [string, string] => [`file ${file}`, text]),
      ...result.commandLines.map((line): [string, string] => ["a command line", line]),
    ];
    for (const [where, text] of places) {
      for (const secret of secrets()) {
        if (text.includes(secret)) throw new Error(`a secret appears in ${where}:\n${text.slice(0, 2000)}`);
      }
    }
  }

  it("lock list, show and break, with a key and with a SAS, succeeding and failing", async () => {
    const container = uniqueName("secrets");
    const blobs = blobService(keyString).getContainerClient(container);
    await blobs.create();
    const lock = blobLock(blobs, "nightly", { durationInSeconds: 15, holderName: "job" });
    for (const cs of [keyString, sasString]) {
      const handle = await lock.acquire();
      const list = await run(cs, () => ["lock", "list", container, "--json"]);
      const show = await run(cs, () => ["lock", "show", container, "nightly"]);
      const broken = await run(cs, () => ["lock", "break", container, "nightly", "--yes", "--now"]);
      expect([list.code, show.code, broken.code]).toEqual([0, 0, 0]);
      expect(list.stdout).toContain('"name":"job"');
      for (const result of [list, show, broken]) expectNoSecret(result);
      await handle.release().catch(() => undefined);
    }
    const handle = await lock.acquire();
    try {
      const failures = [
        await run(readOnlySasString, () => ["lock", "break", container, "nightly", "--yes", "--now"]), // 403
        await run(wrongKey, () => ["lock", "show", container, "nightly"]), // 403 AuthenticationFailed
        await run(unreachable, () => ["lock", "list", container]), // ECONNREFUSED
        await run(keyString.replace("AccountName=", "AccountName"), () => ["lock", "list", container]), // not a connection string
      ];
      expect(failures.map((f) => f.code)).toEqual([1, 1, 1, 2]);
      for (const result of failures) expectNoSecret(result);
    } finally {
      await handle.release();
    }
  }, 120_000);

  it("stress, with a key and with a SAS, succeeding and failing, its JSON and chart included", async () => {
    const tiny = (dir: string) => [
      "stress",
      "--use-env",
      ...["--designs", "single", "--duration", "0.5", "--preload", "5", "--workers", "1"],
      ...["--out", join(dir, "result.json"), "--svg", join(dir, "chart.svg")],
    ];
    const runs = [
      await run(keyString, tiny),
      await run(sasString, tiny),
      await run(readOnlySasString, tiny), // cannot create its table
      await run(unreachable, tiny),
    ];
    expect(runs.map((r) => r.code)).toEqual([0, 0, 1, 1]);
    expect(runs[1]!.written).toEqual(["chart.svg", "result.json"]);
    for (const result of runs) expectNoSecret(result);
  }, 120_000);

  it("bench workers, whatever their scenario, get the connection string through their environment", async () => {
    // Every scenario starts its processes through spawnBenchWorker; the optimistic scenario's (which
    // had it in its arguments) takes minutes to run whole, so its worker is checked here directly.
    for (const name of ["optimistic-writer", "lock-contender"] as const) {
      const worker = spawnBenchWorker(name, ["{}"], sasString);
      try {
        const pid = worker.child.pid!;
        const commandLine = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        expect(commandLine).toContain(name);
        expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain(
          `BENCH_CONNECTION_STRING=${sasString}`,
        );
        for (const secret of secrets()) {
          expect(commandLine).not.toContain(secret);
          expect(worker.child.spawnargs.join(" ")).not.toContain(secret);
        }
      } finally {
        await worker.kill();
      }
    }
  });

  it("bench: a report, worker processes, and a connection string typed on the command line", async () => {
    const batch = (dir: string) => [
      "bench",
      "batch",
      ...["--entities", "100", "--partitions", "1", "--rounds", "1", "--json", "--report", join(dir, "report.md")],
    ];
    const lock = () => [
      "bench",
      "lock",
      "--use-env",
      "--processes",
      "2",
      "--contenders",
      "2",
      "--seconds",
      "1",
      ...["--scale", "2", "--scale-seconds", "1", "--latency", "0", "--list-locks", "20"],
      "--json",
    ];
    const runs = [
      // The user typed the connection string: their own command line has it, nothing else may.
      await run("", (dir) => [...batch(dir), "--connection-string", sasString], { ownCommandLineHasSecret: true }),
      await run(keyString, lock),
      await run(unreachable, (dir) => [...batch(dir), "--use-env"]),
    ];
    expect(runs.map((r) => r.code)).toEqual([0, 0, 1]);
    expect(runs[0]!.written).toEqual([
      "report.md",
      "report/batch-scale-operations.svg",
      "report/batch-scale-payload.svg",
      "report/batch-throughput.svg",
      "report/results.json",
    ]);
    const report = [...runs[0]!.files].find(([file]) => file.endsWith("results.json"))![1];
    expect(report).toMatch(/"command": "azure-storage-concurrency bench batch .*--connection-string <redacted>/);
    // The sampler saw the workers (so the check of their command lines means something).
    expect(runs[1]!.commandLines.filter((line) => line.includes("lock-contender")).length).toBeGreaterThan(0);
    for (const result of runs) expectNoSecret(result);
  }, 120_000);
});
