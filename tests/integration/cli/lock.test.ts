/**
 * `azure-storage-concurrency lock` run as a user runs it (a child process on the test Azurite):
 * list, show and break, with the documented exit codes; the account and container named first; the
 * holder shown before a break and printed escaped; one holder shape in JSON; connection errors as
 * one line that says what to fix.
 */
import { createServer, type Server, type Socket } from "node:net";
import {
  ContainerSASPermissions,
  generateBlobSASQueryParameters,
  StorageSharedKeyCredential,
} from "@azure/storage-blob";
import { blobLock, isLeaseLostError } from "../../../src/lease/index.js";
import { AZURITE_ACCOUNT_KEY } from "../../../src/testing/index.js";
import { spawnWorker } from "../../support/processes.js";
import { blobService, connectionString, endpoints, uniqueName } from "../../support/storage.js";

/** A connection string whose credential is a SAS for one container, with `permissions`. */
function containerSasConnectionString(containerName: string, permissions: string): string {
  const sas = generateBlobSASQueryParameters(
    {
      containerName,
      permissions: ContainerSASPermissions.parse(permissions),
      expiresOn: new Date(Date.now() + 3_600_000),
    },
    new StorageSharedKeyCredential("devstoreaccount1", AZURITE_ACCOUNT_KEY),
  );
  return `BlobEndpoint=${endpoints().blob};SharedAccessSignature=${sas.toString()}`;
}

async function cli(args: readonly string[], env: Record<string, string> = {}) {
  const run = spawnWorker("tools/cli/main.ts", ["lock", ...args], {
    AZURE_STORAGE_CONNECTION_STRING: connectionString(),
    ...env,
  });
  const { code } = await run.exited;
  return { code, out: run.lines.join("\n"), err: run.stderr() };
}

describe("lock command", () => {
  it("lists locks and shows one lock's holder, state and token, naming the account and container first", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const held = await blobLock(container, "jobs/report", { durationInSeconds: 15, holderName: "reporter" }).acquire();
    await blobLock(container, "jobs/idle").withLock(() => undefined);
    await container.getBlockBlobClient("not-a-lock").upload("x", 1);

    const list = await cli(["list", container.containerName]);
    expect(list.code).toBe(0);
    expect(list.err.split("\n")[0]).toBe(
      `account 'devstoreaccount1' (${container.url.replace(/\/[^/]+$/, "")}), from AZURE_STORAGE_CONNECTION_STRING; container '${container.containerName}'`,
    );
    expect(list.out).toMatch(/jobs\/report\s+leased\s+1\s+\d+s\s+'reporter' on /);
    expect(list.out).toMatch(/jobs\/idle\s+available\s+1/);
    expect(list.out).not.toMatch(/not-a-lock/);

    const show = await cli(["show", container.containerName, "jobs/report", "--json"]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.out)).toMatchObject({
      state: "leased",
      held: true,
      fencingToken: 1,
      holder: { name: "reporter", pid: process.pid, durationInSeconds: 15, renewIntervalInMs: 5000 },
    });
    expect((await cli(["show", container.containerName, "jobs/report"])).out).toMatch(
      /holder: +'reporter' on .*\(pid \d+\)/,
    );
    await held.release();
  }, 60_000);

  it("gives the holder one JSON shape in `list --json` and `show --json`", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const held = await blobLock(container, "leader", { durationInSeconds: 20, holderName: "node-a" }).acquire();
    try {
      // Flags before the positionals: the same as after them.
      const list = JSON.parse((await cli(["list", "--json", container.containerName])).out) as { holder: unknown }[];
      const show = JSON.parse((await cli(["show", "--json", container.containerName, "leader"])).out) as {
        holder: unknown;
      };
      const keys = ["acquiredAt", "ageInSeconds", "durationInSeconds", "host", "name", "pid", "renewIntervalInMs"];
      expect(Object.keys(list[0]!.holder as object).sort()).toEqual(keys);
      expect(Object.keys(show.holder as object).sort()).toEqual(keys);
      const { ageInSeconds: _a, ...fromList } = list[0]!.holder as Record<string, unknown>;
      const { ageInSeconds: _b, ...fromShow } = show.holder as Record<string, unknown>;
      expect(fromList).toEqual(fromShow);
      expect(fromShow).toMatchObject({ name: "node-a", pid: process.pid, durationInSeconds: 20 });
    } finally {
      await held.release();
    }
  }, 60_000);

  it("prints holder fields escaped: a holder name cannot forge lines or send terminal escapes", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const forged = "x\u001b[2J\u001b]0;pwned\u0007\nleader  available  99\r\u009b31m\u202e";
    const held = await blobLock(container, "leader", { durationInSeconds: 15, holderName: forged }).acquire();
    try {
      const runs = [
        await cli(["list", container.containerName]),
        await cli(["list", container.containerName, "--json"]),
        await cli(["show", container.containerName, "leader"]),
        await cli(["show", container.containerName, "leader", "--json"]),
      ];
      for (const run of runs) {
        expect(run.code).toBe(0);
        // eslint-disable-next-line no-control-regex
        expect(run.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
      }
      expect(runs[0]!.out.split("\n")).toHaveLength(2); // the header and one lock: no forged line
      expect(runs[0]!.out).toContain(
        "'x\\u001b[2J\\u001b]0;pwned\\u0007\\u000aleader  available  99\\u000d\\u009b31m\\u202e'",
      );
      expect(runs[2]!.out.split("\n")).toHaveLength(6);
      // JSON stays JSON, and reads back as the name that was written.
      expect((JSON.parse(runs[1]!.out) as { holder: { name: string } }[])[0]!.holder.name).toBe(forged);
      expect((JSON.parse(runs[3]!.out) as { holder: { name: string } }).holder.name).toBe(forged);
    } finally {
      await held.release();
    }
  }, 60_000);

  it("break needs --yes (exit 3); with it the holder is shown, the lease is broken and the live holder notices", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const lock = blobLock(container, "stuck", {
      durationInSeconds: 15,
      renewIntervalInMs: 200,
      holderName: "stuck-job",
    });
    const handle = await lock.acquire();

    const refused = await cli(["break", container.containerName, "stuck"]);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(/--yes/);
    expect((await lock.inspect()).state).toBe("leased");

    const broken = await cli(["break", container.containerName, "stuck", "--yes", "--now"]);
    expect(broken.code).toBe(0);
    expect(broken.err).toMatch(
      new RegExp(
        `^breaking the lease on blob '${container.containerName}/stuck', held by 'stuck-job' on .* \\(pid ${process.pid}\\), acquired \\d+s ago, fencing token 1$`,
        "m",
      ),
    );
    expect(broken.out.trim()).toBe(`broke the lease on blob '${container.containerName}/stuck'; it is free now`);
    // The holder is named once, before the break (issue 23: it was printed twice).
    expect(`${broken.err}${broken.out}`.match(/'stuck-job'/g)).toHaveLength(1);
    expect(["broken", "available"]).toContain((await lock.inspect()).state);
    if (!handle.signal.aborted)
      await new Promise((resolve) => handle.signal.addEventListener("abort", resolve, { once: true }));
    expect(isLeaseLostError(handle.signal.reason)).toBe(true);
  }, 60_000);

  it("`lock break --yes locks nightly-report` breaks that lock, not a container named nightly-report", async () => {
    // The defect: --yes took the next word as its value, so the container name was taken for the
    // lock and the lock name for the container, and the wrong lease was broken.
    const locks = blobService().getContainerClient(uniqueName("locks"));
    const nightly = uniqueName("nightly");
    const lock = blobLock(locks, nightly, { durationInSeconds: 15 });
    const handle = await lock.acquire();
    const sameName = blobService().getContainerClient(nightly);
    await sameName.create();
    await sameName.getBlobLeaseClient().acquireLease(15);
    try {
      const run = await cli(["break", "--yes", locks.containerName, nightly, "--now"]);
      expect(run.code).toBe(0);
      expect(run.out).toMatch(new RegExp(`^broke the lease on blob '${locks.containerName}/${nightly}'`));
      expect(["broken", "available"]).toContain((await lock.inspect()).state);
      expect((await sameName.getProperties()).leaseState).toBe("leased");
    } finally {
      await handle.release().catch(() => undefined);
      await sameName.getBlobLeaseClient().breakLease(0);
    }
  }, 60_000);

  it("the default break waits out the holder's renewal interval, so the holder stops first", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const handle = await blobLock(container, "live", { durationInSeconds: 15, renewIntervalInMs: 500 }).acquire();
    const events: string[] = [];
    handle.signal.addEventListener("abort", () => events.push("holder stopped"));
    const broken = await cli(["break", container.containerName, "live", "--yes"]);
    expect(broken.out).toMatch(/free in 2 s/);
    const next = await blobLock(container, "live", { durationInSeconds: 15 }).acquire({ timeoutInMs: 20_000 });
    events.push("next holder");
    expect(events).toEqual(["holder stopped", "next holder"]);
    await next.release();
  }, 60_000);

  it("lists with a container SAS that may only read and list (rl), and says what a SAS lacks without Entra advice", async () => {
    const container = blobService().getContainerClient(uniqueName("cli"));
    const held = await blobLock(container, "jobs/nightly", { durationInSeconds: 15, holderName: "sas-job" }).acquire();
    try {
      const sas = { AZURE_STORAGE_CONNECTION_STRING: containerSasConnectionString(container.containerName, "rl") };
      const list = await cli(["list", container.containerName], sas);
      expect(list).toMatchObject({ code: 0 });
      expect(list.out).toMatch(/jobs\/nightly\s+leased\s+1\s+\d+s\s+'sas-job' on /);

      // Breaking needs write (w): the advice names the SAS right, never a role assignment.
      const broken = await cli(["break", container.containerName, "jobs/nightly", "--yes", "--now"], sas);
      expect(broken.code).toBe(1);
      const last = broken.err.trimEnd().split("\n").at(-1)!;
      expect(last).toMatch(
        /^azure-storage-concurrency: .*\(403 \w+: the SAS does not allow this: .*write \(w\) to break/,
      );
      expect(last).not.toMatch(/role|Entra|identity/i);
      expect((await blobLock(container, "jobs/nightly").inspect()).state).toBe("leased"); // nothing was broken
    } finally {
      await held.release();
    }
    // A container that does not exist: the listing says so (exit 4), with the same SAS rights.
    const missing = uniqueName("cli");
    const absent = await cli(["list", missing], {
      AZURE_STORAGE_CONNECTION_STRING: containerSasConnectionString(missing, "rl"),
    });
    expect(absent.code).toBe(4);
    expect(absent.err).toMatch(new RegExp(`container '${missing}' does not exist`));
  }, 60_000);

  it("missing things exit 4; bad usage exits 2", async () => {
    const missing = uniqueName("cli");
    expect((await cli(["show", missing, "x"])).code).toBe(4);
    expect((await cli(["list", missing])).code).toBe(4);
    expect((await cli(["frob", missing])).code).toBe(2);
    expect((await cli(["break", missing, "x", "--yes", "--break-period", "90"])).code).toBe(2);
    expect((await cli(["list", missing], { AZURE_STORAGE_CONNECTION_STRING: "" })).code).toBe(2);
  }, 60_000);

  describe("connection errors: one line that says what to fix", () => {
    let silent: Server;
    let silentPort: number;
    const sockets = new Set<Socket>();
    const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    const at = (blobEndpoint: string) =>
      `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${key};BlobEndpoint=${blobEndpoint}`;

    beforeAll(async () => {
      // Accepts connections and never answers.
      silent = createServer((socket) => sockets.add(socket));
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
      silentPort = (silent.address() as { port: number }).port;
    });
    afterAll(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });

    it.each([
      [
        "a connection string that is not one",
        ["list", "locks", "--connection-string", "garbage"],
        2,
        /^azure-storage-concurrency: --connection-string is not a storage connection string: expected Key=Value pairs/,
      ],
      [
        "a connection string without FileEndpoint, for --file",
        ["show", "--file", "share/settings.json"],
        2,
        /^azure-storage-concurrency: AZURE_STORAGE_CONNECTION_STRING has no FileEndpoint and no EndpointSuffix, which this command needs: add FileEndpoint=https:\/\/<account>\.file\.core\.windows\.net\//,
      ],
      [
        "an endpoint where nothing listens",
        ["show", "locks", "x", "--connection-string", at("http://127.0.0.1:1/devstoreaccount1")],
        1,
        /^azure-storage-concurrency: cannot reach http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\): nothing listens there: check the endpoint and port, or start the emulator$/, // the library's networkHint
      ],
    ])(
      "%s",
      async (_, args, code, message) => {
        const run = await cli(args);
        expect(run.code).toBe(code);
        const lines = run.err.trimEnd().split("\n");
        expect(lines.at(-1)).toMatch(message);
        expect(lines.length).toBeLessThanOrEqual(2); // the target line, then the error
        expect(run.err).not.toContain(key);
      },
      30_000,
    );

    it("an endpoint that never answers: the call's time limit", async () => {
      const run = await cli([
        "show",
        "locks",
        "x",
        "--connection-string",
        at(`http://127.0.0.1:${silentPort}/devstoreaccount1`),
      ]);
      expect(run.code).toBe(1);
      const lines = run.err.trimEnd().split("\n");
      expect(lines).toHaveLength(2);
      // Within the command's 10 s, or sooner when the lock's own request time limit ends the call.
      expect(lines[1]).toMatch(
        new RegExp(
          `^azure-storage-concurrency: no answer from http://127\\.0\\.0\\.1:${silentPort}/devstoreaccount1 within \\d+ s: ` +
            "check the endpoint, the network and any firewall$",
        ),
      );
    }, 30_000);
  });
});
