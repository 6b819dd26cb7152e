/**
 * `lock` with Microsoft Entra ID (`--blob-endpoint`, DefaultAzureCredential), end to end and with no
 * account key anywhere: Azurite runs with OAuth (`--oauth basic`, which needs HTTPS: a self-signed
 * certificate made here with openssl, trusted by the child processes through NODE_EXTRA_CA_CERTS),
 * and DefaultAzureCredential finds its token where App Service's managed identity would give it
 * (IDENTITY_ENDPOINT and IDENTITY_HEADER), served here by a small HTTP server. Azurite checks the
 * token's audience, issuer and lifetime, not its signature.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { startAzurite, type RunningAzurite } from "../../../src/testing/index.js";
import { spawnWorker } from "../../support/processes.js";
import { uniqueName } from "../../support/storage.js";

describe("lock with Microsoft Entra ID", () => {
  let dir: string;
  let azurite: RunningAzurite;
  let identity: Server;
  let identityEndpoint: string;
  const tokenRequests: string[] = [];
  let tls: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "asc-entra-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"].concat([
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
      ]),
      { stdio: "ignore" },
    );
    tls = { NODE_EXTRA_CA_CERTS: cert };
    azurite = await startAzurite({ extraArgs: ["--oauth", "basic", "--cert", cert, "--key", key] });

    const now = Math.floor(Date.now() / 1000);
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const token = [
      part({ alg: "RS256", typ: "JWT" }),
      part({
        aud: "https://storage.azure.com",
        iss: "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
        iat: now - 60,
        nbf: now - 60,
        exp: now + 3600,
        oid: "00000000-0000-0000-0000-000000000001",
      }),
      "not-checked",
    ].join(".");
    identity = createServer((request, response) => {
      tokenRequests.push(`${String(request.headers["x-identity-header"])} ${request.url ?? ""}`);
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          access_token: token,
          expires_on: String(now + 3600),
          resource: "https://storage.azure.com",
          token_type: "Bearer",
        }),
      );
    });
    await new Promise<void>((done) => identity.listen(0, "127.0.0.1", done));
    identityEndpoint = `http://127.0.0.1:${(identity.address() as { port: number }).port}/msi/token`;
  }, 60_000);

  afterAll(async () => {
    await new Promise<void>((done) => (identity ? identity.close(() => done()) : done()));
    await azurite?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** The tool with no connection string anywhere: only the token. */
  async function cli(args: readonly string[], env: Record<string, string>) {
    const run = spawnWorker("tools/cli/main.ts", ["lock", ...args, "--blob-endpoint", azurite.blobEndpoint], {
      AZURE_STORAGE_CONNECTION_STRING: "",
      ...tls,
      ...env,
    });
    const { code } = await run.exited;
    return { code, out: run.lines.join("\n"), err: run.stderr() };
  }

  it("lists, shows and breaks a lock signed in with DefaultAzureCredential (a managed identity)", async () => {
    const container = uniqueName("entra");
    const holder = spawnWorker("tests/integration/cli/workers/hold-lock.ts", [container, "nightly", "entra-job"], {
      ASC_TEST_CONNECTION_STRING: azurite.connectionString,
      ...tls,
    });
    try {
      await holder.waitFor((m: { held?: boolean }) => m?.held === true, 30_000);
      const managedIdentity = { IDENTITY_ENDPOINT: identityEndpoint, IDENTITY_HEADER: "secret-header" };

      const list = await cli(["list", container], managedIdentity);
      expect(list.code).toBe(0);
      expect(list.err.split("\n")[0]).toBe(
        `account 'devstoreaccount1' (${azurite.blobEndpoint}), signed in with Microsoft Entra ID (DefaultAzureCredential); container '${container}'`,
      );
      expect(list.out).toMatch(/^nightly +leased +1 +\d+s +'entra-job' on /m);

      const show = await cli(["show", container, "nightly", "--json"], managedIdentity);
      expect(JSON.parse(show.out)).toMatchObject({ held: true, fencingToken: 1, holder: { name: "entra-job" } });

      const broken = await cli(["break", container, "nightly", "--yes", "--now"], managedIdentity);
      expect(broken.code).toBe(0);
      expect(broken.out).toMatch(new RegExp(`^broke the lease on blob '${container}/nightly'; it is free now`));
      expect(broken.err).toMatch(
        new RegExp(`^breaking the lease on blob '${container}/nightly', held by 'entra-job'`, "m"),
      );
      await holder.waitFor((m: { lost?: boolean }) => m?.lost === true, 30_000);

      expect(tokenRequests.length).toBeGreaterThanOrEqual(3); // each run signed in
      expect(tokenRequests.every((r) => r.startsWith("secret-header ") && r.includes("storage.azure.com"))).toBe(true);
    } finally {
      await holder.kill();
    }
  }, 90_000);

  it("says in one line what to do when no credential is found", async () => {
    // Only this project's node on the PATH (no `az` or `azd` to ask), and the developer chain only.
    const path = [dirname(process.execPath), resolve("node_modules", ".bin")].join(":");
    const run = await cli(["list", "locks"], { PATH: path, AZURE_TOKEN_CREDENTIALS: "dev" });
    expect(run.code).toBe(1);
    expect(run.err.trimEnd().split("\n").at(-1)).toBe(
      "azure-storage-concurrency: Microsoft Entra ID sign-in found no credential (DefaultAzureCredential): run `az login`, " +
        "set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or run where a managed identity is assigned; or use a connection string",
    );
  }, 60_000);
});
