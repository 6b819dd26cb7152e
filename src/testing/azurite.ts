/**
 * Starts a real Azurite (the open-source Azure Storage emulator) for tests, examples and benchmarks:
 * on free ports, with its data in a temporary folder removed on stop (or in memory), as a child
 * process that dies with its owner.
 *
 * `require("azurite")` cannot be used (its entry imports `vscode`), so this spawns Azurite's own
 * command line with the Node.js binary that runs the caller, and reads the ports it prints.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** The well-known development account that Azurite serves (documented by Azurite; not a secret). */
export const AZURITE_ACCOUNT_NAME = "devstoreaccount1";
/** The well-known key of Azurite's development account (documented by Azurite; not a secret). */
export const AZURITE_ACCOUNT_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

type AzuriteService = "blob" | "queue" | "table";

/**
 * Loaded into Azurite's process before its command line (`--import`): when its stdin, a pipe from
 * the process that started it, ends or breaks (that process is gone), it removes the data folder
 * (ASC_AZURITE_LOCATION) and exits.
 */
const PARENT_WATCH =
  "data:text/javascript," +
  encodeURIComponent(
    `import { rmSync } from "node:fs";
let gone = false;
const onGone = () => {
  if (gone) return;
  gone = true;
  const location = process.env.ASC_AZURITE_LOCATION;
  try { if (location) rmSync(location, { recursive: true, force: true }); } finally { process.exit(0); }
};
process.stdin.on("data", () => {});
process.stdin.once("end", onGone);
process.stdin.once("close", onGone);
process.stdin.once("error", onGone);`,
  );

/** An extra storage account for Azurite to serve ({@link StartAzuriteOptions.accounts}). */
export interface AzuriteAccount {
  /** The account name: 3-24 lowercase letters and digits. */
  readonly name: string;
  /** The account key, base64. */
  readonly key: string;
}

/** Options for {@link startAzurite}. */
export interface StartAzuriteOptions {
  /**
   * Path of Azurite's command line script. By default it is resolved from the `azurite` package
   * installed in the current working directory's project.
   */
  readonly azuriteCliPath?: string;
  /**
   * Where Azurite keeps its data:
   * - `"disk"`: a new temporary folder, removed when Azurite stops;
   * - `"memory"`: Azurite's `--inMemoryPersistence`. In Azurite 3.x every queue message then gets its
   *   own extent record, and the extent collector (a first pass at start, then every minute) removes
   *   them one by one without yielding: after a few thousand queue messages, every service stops
   *   answering for seconds to minutes. With disk persistence the messages share extents and the pass
   *   is short.
   * @default "disk"
   */
  readonly persistence?: "disk" | "memory";
  /**
   * Extra command line arguments for Azurite (for example `["--loose"]`).
   * @default []
   */
  readonly extraArgs?: readonly string[];
  /**
   * How long to wait for Azurite to report that every service listens.
   * @default 30000
   */
  readonly startTimeoutInMs?: number;
  /**
   * More accounts for Azurite to serve besides its development account (Azurite's
   * `AZURITE_ACCOUNTS`), each with a base64 key: for tests that need a key no one else knows, for
   * example to check that it never reaches a log, a file or a process list.
   * @default []
   */
  readonly accounts?: readonly AzuriteAccount[];
  /** Cancels the start; Azurite is stopped if it was already running. */
  readonly abortSignal?: AbortSignal;
}

/** A running Azurite, as returned by {@link startAzurite}. */
export interface RunningAzurite extends AsyncDisposable {
  /** A connection string for the three services, usable with each SDK's `fromConnectionString`. */
  readonly connectionString: string;
  /** The development account's name. */
  readonly accountName: string;
  /** The development account's key (a published, well-known value). */
  readonly accountKey: string;
  /** The blob service: `http://127.0.0.1:<port>/devstoreaccount1`. */
  readonly blobEndpoint: string;
  /** The queue service: `http://127.0.0.1:<port>/devstoreaccount1`. */
  readonly queueEndpoint: string;
  /** The table service: `http://127.0.0.1:<port>/devstoreaccount1`. */
  readonly tableEndpoint: string;
  /** The temporary folder holding Azurite's data (removed by {@link RunningAzurite.stop}); `undefined` in memory. */
  readonly location: string | undefined;
  /** Stops Azurite; resolves once the process has exited and its data folder is removed. Safe to call more than once. */
  stop(): Promise<void>;
}

const LISTENING = /Azurite (Blob|Queue|Table) service is successfully listening at (https?:\/\/\S+)/;

/**
 * Starts Azurite on free ports and resolves once its blob, queue and table services listen. Its data
 * lives in a temporary folder that is removed when it stops (see {@link StartAzuriteOptions.persistence}).
 *
 * It runs with `--skipApiVersionCheck` (the newest SDKs send API versions Azurite may not know yet)
 * and `--disableTelemetry`. Table clients talking to it need `allowInsecureConnection: true`.
 *
 * @example
 * ```ts
 * import { startAzurite } from "azure-storage-concurrency/testing";
 * import { BlobServiceClient } from "@azure/storage-blob";
 *
 * const azurite = await startAzurite();
 * try {
 *   const blobs = BlobServiceClient.fromConnectionString(azurite.connectionString);
 *   await blobs.getContainerClient("demo").createIfNotExists();
 * } finally {
 *   await azurite.stop();
 * }
 * ```
 */
export async function startAzurite(options: StartAzuriteOptions = {}): Promise<RunningAzurite> {
  // Azurite's main command always runs all three services (unnamed ones on fixed default ports, which
  // would clash between instances), so every service gets a free port.
  const services: readonly AzuriteService[] = ["blob", "queue", "table"];
  const startTimeoutInMs = options.startTimeoutInMs ?? 30_000;
  const persistence = options.persistence ?? "disk";
  if (persistence !== "disk" && persistence !== "memory") {
    throw new TypeError(`\`persistence\` must be "disk" or "memory", got ${JSON.stringify(persistence)}.`);
  }
  const accounts = options.accounts ?? [];
  for (const { name, key } of accounts) {
    if (!/^[a-z0-9]{3,24}$/.test(name) || name === AZURITE_ACCOUNT_NAME)
      throw new TypeError(`\`accounts\`: "${name}" is not a storage account name (3-24 lowercase letters and digits).`);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) throw new TypeError(`\`accounts\`: the key of "${name}" is not base64.`);
  }
  options.abortSignal?.throwIfAborted();

  const cli = options.azuriteCliPath ?? resolveAzuriteCli();
  const location = persistence === "disk" ? mkdtempSync(join(tmpdir(), "azurite-")) : undefined;
  const removeLocation = () => {
    if (location !== undefined) rmSync(location, { recursive: true, force: true });
  };
  const args = [
    cli,
    ...(location === undefined ? ["--inMemoryPersistence"] : ["--location", location]),
    "--skipApiVersionCheck",
    "--disableTelemetry",
    ...services.flatMap((s) => [`--${s}Host`, "127.0.0.1", `--${s}Port`, "0"]),
    ...(options.extraArgs ?? []),
  ];
  // Given to Azurite through its environment, never its command line (any local user can read that).
  const env =
    accounts.length === 0
      ? process.env
      : {
          ...process.env,
          AZURITE_ACCOUNTS: [{ name: AZURITE_ACCOUNT_NAME, key: AZURITE_ACCOUNT_KEY }, ...accounts]
            .map(({ name, key }) => `${name}:${key}`)
            .join(";"),
        };
  // Azurite watches a pipe to this process (its stdin): when this process ends, however it ends
  // (SIGTERM, SIGKILL, a crash), the system closes the pipe, and Azurite removes its data folder and
  // exits. An "exit" handler alone would not run on a signal.
  const child = spawn(process.execPath, ["--import", PARENT_WATCH, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    env: location === undefined ? env : { ...env, ASC_AZURITE_LOCATION: location },
  });
  (child.stdin as { unref?: () => void } | null)?.unref?.();
  const stopChild = () => stopProcess(child).finally(removeLocation);
  // On a normal exit, at once (the pipe closes only after this process is gone).
  const killOnExit = () => {
    child.kill("SIGKILL");
    removeLocation();
  };
  process.once("exit", killOnExit);

  try {
    const endpoints = await waitForEndpoints(child, services, startTimeoutInMs, options.abortSignal);
    child.stdout?.resume();
    child.stderr?.resume();
    child.unref();
    (child.stdout as { unref?: () => void } | null)?.unref?.();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    return describe(endpoints, location, async () => {
      process.removeListener("exit", killOnExit);
      await stopChild();
    });
  } catch (error) {
    process.removeListener("exit", killOnExit);
    await stopChild();
    throw error;
  }
}

function resolveAzuriteCli(): string {
  const cli = findAzuriteCli([join(process.cwd(), "package.json")]);
  if (cli === undefined) {
    throw new Error(
      "Azurite is not installed in this project: run `npm install --save-dev azurite`, " + "or pass `azuriteCliPath`.",
    );
  }
  return cli;
}

/**
 * The path of Azurite's command line script, from the first of `from` (files, each resolving
 * packages as a module at that path would) where the `azurite` package is installed; undefined
 * when none has it. {@link startAzurite} looks in the working directory's project; a tool installed
 * elsewhere (globally, or by npx) looks beside itself too, and passes the path as `azuriteCliPath`.
 *
 * @example
 * ```ts
 * import { join } from "node:path";
 * import { findAzuriteCli, startAzurite } from "azure-storage-concurrency/testing";
 *
 * const azuriteCliPath = findAzuriteCli([join(process.cwd(), "package.json"), import.meta.url]);
 * if (azuriteCliPath === undefined) throw new Error("install azurite: npm install --save-dev azurite");
 * const azurite = await startAzurite({ azuriteCliPath });
 * await azurite.stop();
 * ```
 */
export function findAzuriteCli(from: readonly string[]): string | undefined {
  for (const base of from) {
    const projectRequire = createRequire(base);
    let manifestPath: string;
    try {
      manifestPath = projectRequire.resolve("azurite/package.json");
    } catch {
      continue;
    }
    const manifest = projectRequire(manifestPath) as { bin?: Record<string, string> };
    const cli = manifest.bin?.["azurite"];
    if (!cli) throw new Error(`The azurite package at ${dirname(manifestPath)} names no \`azurite\` command.`);
    return join(dirname(manifestPath), cli);
  }
  return undefined;
}

function waitForEndpoints(
  child: ChildProcess,
  services: readonly AzuriteService[],
  timeoutInMs: number,
  abortSignal: AbortSignal | undefined,
): Promise<Map<AzuriteService, string>> {
  return new Promise((resolve, reject) => {
    const found = new Map<AzuriteService, string>();
    let output = "";
    const finish = (error?: Error) => {
      clearTimeout(timer);
      abortSignal?.removeEventListener("abort", onAbort);
      child.stdout?.removeListener("data", onData);
      child.removeListener("exit", onExit);
      if (error) reject(error);
      else resolve(found);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      for (const line of output.split("\n")) {
        const match = LISTENING.exec(line);
        if (match) found.set(match[1]!.toLowerCase() as AzuriteService, match[2]!.replace(/\/$/, ""));
      }
      if (services.every((s) => found.has(s))) finish();
    };
    const onExit = (code: number | null) =>
      finish(new Error(`Azurite exited (code ${code}) before it listened. Its output:\n${output}`));
    const onAbort = () => finish(abortSignal!.reason as Error);
    const timer = setTimeout(
      () => finish(new Error(`Azurite did not listen within ${timeoutInMs} ms. Its output:\n${output}`)),
      timeoutInMs,
    );
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.once("exit", onExit);
    abortSignal?.addEventListener("abort", onAbort, { once: true });
  });
}

function describe(
  endpoints: Map<AzuriteService, string>,
  location: string | undefined,
  stop: () => Promise<void>,
): RunningAzurite {
  const endpoint = (service: AzuriteService) => `${endpoints.get(service)!}/${AZURITE_ACCOUNT_NAME}`;
  const blobEndpoint = endpoint("blob");
  const queueEndpoint = endpoint("queue");
  const tableEndpoint = endpoint("table");
  const connectionString = buildConnectionString({ blobEndpoint, queueEndpoint, tableEndpoint });
  let stopping: Promise<void> | undefined;
  const stopOnce = () => (stopping ??= stop());
  return {
    connectionString,
    accountName: AZURITE_ACCOUNT_NAME,
    accountKey: AZURITE_ACCOUNT_KEY,
    blobEndpoint,
    queueEndpoint,
    tableEndpoint,
    location,
    stop: stopOnce,
    [Symbol.asyncDispose]: stopOnce,
  };
}

/** Endpoints for {@link buildConnectionString}. */
export interface DevelopmentEndpoints {
  /** The blob endpoint, account path included (`http://127.0.0.1:10000/devstoreaccount1`); left out when absent. */
  readonly blobEndpoint?: string | undefined;
  /** The queue endpoint, account path included; left out when absent. */
  readonly queueEndpoint?: string | undefined;
  /** The table endpoint, account path included; left out when absent. */
  readonly tableEndpoint?: string | undefined;
  /** The file endpoint, account path included (e.g. a {@link startFilesResponder | Files responder}); left out when absent. */
  readonly fileEndpoint?: string | undefined;
}

/**
 * Builds a connection string for Azurite's development account with the given endpoints (for
 * example the endpoints of a {@link createFaultProxy | fault proxy} in front of Azurite).
 *
 * @example
 * ```ts
 * import { QueueClient } from "@azure/storage-queue";
 * import { buildConnectionString, createFaultProxy, startAzurite } from "azure-storage-concurrency/testing";
 *
 * const azurite = await startAzurite();
 * const proxy = await createFaultProxy({ target: azurite.queueEndpoint });
 * // Queue requests go through the proxy; the blob and table services are not in this string.
 * const queue = new QueueClient(buildConnectionString({ queueEndpoint: proxy.endpoint }), "jobs");
 * ```
 */
export function buildConnectionString(endpoints: DevelopmentEndpoints): string {
  const parts = [
    "DefaultEndpointsProtocol=http",
    `AccountName=${AZURITE_ACCOUNT_NAME}`,
    `AccountKey=${AZURITE_ACCOUNT_KEY}`,
  ];
  if (endpoints.blobEndpoint) parts.push(`BlobEndpoint=${endpoints.blobEndpoint}`);
  if (endpoints.queueEndpoint) parts.push(`QueueEndpoint=${endpoints.queueEndpoint}`);
  if (endpoints.tableEndpoint) parts.push(`TableEndpoint=${endpoints.tableEndpoint}`);
  if (endpoints.fileEndpoint) parts.push(`FileEndpoint=${endpoints.fileEndpoint}`);
  return parts.join(";") + ";";
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // Keep this process alive until the child has really gone.
    child.ref();
    const force = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(force);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
