/**
 * Logging through `@azure/logger` under the package's own namespace: lock acquire, renewal and
 * release, and retries, at their levels, with secrets redacted; and nothing at all on stderr unless
 * logging was asked for (AZURE_LOG_LEVEL, as for the Azure SDKs).
 */
import { format } from "node:util";
import { AzureLogger, setLogLevel, getLogLevel } from "@azure/logger";
import { fixedBackoff, retry, SDK_SINGLE_ATTEMPT } from "../../../src/retry/index.js";
import { isStorageRequestError } from "../../../src/index.js";
import { spawnWorker } from "../../support/processes.js";
import { blobService, connectionString, endpoints, faultProxyFor, uniqueName } from "../../support/storage.js";
import { runLoggedActivity, SECRET_SIGNATURE } from "./workers/activity.js";

const NAMESPACE = "azure:azure-storage-concurrency:";

describe("logging", () => {
  const originalLog = AzureLogger.log;
  const lines: string[] = [];
  beforeEach(() => {
    lines.length = 0;
    AzureLogger.log = (...args: unknown[]) => void lines.push(format(...args));
  });
  afterEach(() => {
    AzureLogger.log = originalLog;
    setLogLevel(undefined);
  });
  const ours = () => lines.filter((line) => line.startsWith(NAMESPACE));
  const waitForLine = async (pattern: RegExp) => {
    for (let waited = 0; !ours().some((line) => pattern.test(line)); waited += 20) {
      if (waited > 15_000) throw new Error(`no log line matched ${pattern}; got:\n${ours().join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it("setLogLevel('verbose'): lock acquired, renewed and released, and a retry, under the package's namespace", async () => {
    const container = blobService().getContainerClient(uniqueName("log"));
    setLogLevel("verbose");
    await runLoggedActivity(connectionString(), endpoints().blob, container.containerName, () =>
      waitForLine(/^azure:azure-storage-concurrency:verbose renewed the lease on blob '[^']+\/logged'$/),
    );

    const log = ours();
    const where = `blob '${container.containerName}/logged'`;
    expect(log).toContain(`${NAMESPACE}info acquired the lock on ${where} (fencing token 1)`);
    expect(log).toContain(`${NAMESPACE}verbose renewed the lease on ${where}`);
    expect(log).toContain(`${NAMESPACE}info released the lock on ${where}`);
    expect(log.indexOf(`${NAMESPACE}info acquired the lock on ${where} (fencing token 1)`)).toBeLessThan(
      log.indexOf(`${NAMESPACE}info released the lock on ${where}`),
    );
    const retries = log.filter((line) => line.startsWith(`${NAMESPACE}verbose retrying "read `));
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatch(/after attempt 1 failed \(throttled 503 ServerBusy\); waiting 10 ms$/);
    // The SAS signature in the operation name is redacted, in the library's lines and everywhere else.
    expect(retries[0]).toContain("sig=<redacted>");
    expect(lines.join("\n")).not.toContain(SECRET_SIGNATURE);
    expect(log.some((line) => line.startsWith(`${NAMESPACE}warning`))).toBe(false); // nothing went wrong
  });

  it("setLogLevel('info') leaves renewals and retries out; a retry budget used up is a warning", async () => {
    const container = blobService().getContainerClient(uniqueName("log"));
    setLogLevel("info");
    expect(getLogLevel()).toBe("info");
    await runLoggedActivity(connectionString(), endpoints().blob, container.containerName);
    const log = ours();
    expect(log.filter((line) => line.startsWith(`${NAMESPACE}info `))).toHaveLength(2); // acquired, released
    expect(log.filter((line) => !line.startsWith(`${NAMESPACE}info `))).toEqual([]);

    lines.length = 0;
    const { proxy, connectionString: busy } = await faultProxyFor("blob", {
      rules: [{ action: { type: "serverBusy" } }],
    });
    await using _ = proxy;
    const flaky = blobService(busy, { retryOptions: SDK_SINGLE_ATTEMPT.storage }).getContainerClient(
      container.containerName,
    );
    const failure = await retry(({ abortSignal }) => flaky.getProperties({ abortSignal }), {
      backoff: fixedBackoff({ delayInMs: 10 }),
      maxRetries: 1,
      operationName: "read the container",
    }).catch((error: unknown) => error);
    expect(isStorageRequestError(failure)).toBe(true);
    expect(ours()).toEqual([
      `${NAMESPACE}warning gave up on "read the container" after 2 attempts (throttled 503 ServerBusy)`,
    ]);
  });

  it("prints nothing unless asked: a process without AZURE_LOG_LEVEL writes nothing on stderr, one with it writes our lines", async () => {
    const container = blobService().getContainerClient(uniqueName("log"));
    const [silent, verbose] = [{ AZURE_LOG_LEVEL: "" }, { AZURE_LOG_LEVEL: "verbose" }].map((env) =>
      spawnWorker("tests/integration/logging/workers/logged-worker.ts", [container.containerName], env),
    );
    for (const worker of [silent!, verbose!]) {
      const { code } = await worker.exited;
      if (code !== 0) throw new Error(`worker exited with ${code}:\n${worker.stderr()}`);
      expect(worker.messages).toEqual([{ done: true }]);
    }
    expect(silent!.stderr()).toBe("");
    expect(verbose!.stderr()).toContain(
      `${NAMESPACE}info acquired the lock on blob '${container.containerName}/logged'`,
    );
    expect(verbose!.stderr()).toContain(`${NAMESPACE}verbose retrying "read `);
    expect(verbose!.stderr()).not.toContain(SECRET_SIGNATURE);
  }, 60_000);

  it("the library's own lines alone: DEBUG=azure:azure-storage-concurrency:<level> without AZURE_LOG_LEVEL (issue 23: the SDKs' lines drowned ours)", async () => {
    const container = blobService().getContainerClient(uniqueName("log"));
    const other = blobService().getContainerClient(uniqueName("log"));
    const [ours, everything] = [
      [container, { AZURE_LOG_LEVEL: "", DEBUG: `${NAMESPACE}info,${NAMESPACE}warning,${NAMESPACE}error` }],
      [other, { AZURE_LOG_LEVEL: "info", DEBUG: "" }],
    ].map(([c, env]) =>
      spawnWorker(
        "tests/integration/logging/workers/logged-worker.ts",
        [(c as typeof container).containerName],
        env as Record<string, string>,
      ),
    );
    for (const worker of [ours!, everything!]) {
      const { code } = await worker.exited;
      if (code !== 0) throw new Error(`worker exited with ${code}:\n${worker.stderr()}`);
    }
    const lines = ours!.stderr().split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((line) => !/^azure:azure-storage-concurrency:(info|warning|error) /.test(line))).toEqual([]);
    expect(
      lines.some((line) =>
        line.startsWith(`${NAMESPACE}info acquired the lock on blob '${container.containerName}/logged'`),
      ),
    ).toBe(true);
    // AZURE_LOG_LEVEL=info turns on every Azure SDK's info lines as well.
    expect(
      everything!
        .stderr()
        .split("\n")
        .some((line) => /^azure:(core|storage)/.test(line)),
    ).toBe(true);
  }, 60_000);
});
