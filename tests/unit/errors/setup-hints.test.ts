/**
 * Issue 23, item 4: errors that say what to fix. A request the SDK refused to send is reported as
 * not sent (never "may or may not have been applied"), and `writeBatch` throws when that refusal
 * failed every transaction; a refused connection says that nothing listens there; a 403 and a bad
 * name get a hint. Real SDK clients; no service is reached (the endpoints are refused before
 * sending, or nothing listens on them).
 */
import { createServer } from "node:net";
import { AzureNamedKeyCredential, TableClient } from "@azure/data-tables";
import { RestError, createHttpHeaders, createPipelineRequest, type PipelineRequest } from "@azure/core-rest-pipeline";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import { isStorageRequestError, wrapStorageError, writeBatch } from "../../../src/index.js";

const ACCOUNT = "devstoreaccount1";
const KEY = Buffer.from("not a real key, 32 bytes long...").toString("base64");

/** A loopback port on which nothing listens (a listener opened, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function serviceError(statusCode: number, code: string): RestError {
  return new RestError(`status ${statusCode}`, {
    code,
    statusCode,
    response: { status: statusCode, headers: createHttpHeaders({}), request: {} as PipelineRequest, bodyAsText: null },
  });
}

describe("a request the SDK refused to send (http without allowInsecureConnection)", () => {
  // No allowInsecureConnection: the SDK refuses http before connecting (the port is never used).
  const table = new TableClient(`http://127.0.0.1:9/${ACCOUNT}`, "orders", new AzureNamedKeyCredential(ACCOUNT, KEY), {
    retryOptions: { maxRetries: 0 },
  });

  it("writeBatch throws when it failed every transaction, saying it was not sent and what to set", async () => {
    const actions = ["a", "b"].map((pk) => ["upsert", { partitionKey: pk, rowKey: "1", n: 1 }] as const);
    const error = await writeBatch(table, actions).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toMatchObject({ name: "TableTransactionError", mayHaveBeenApplied: false, transient: false });
    expect(error!.message).toMatch(/was not sent/);
    expect(error!.message).toMatch(/allowInsecureConnection: true/);
    expect(error!.message).not.toMatch(/may or may not/);
  });

  it("wrapStorageError says it was not sent and what to fix, and marks it not transient", async () => {
    const sdkError = await table.getEntity("a", "1").catch((e: unknown) => e);
    const wrapped = wrapStorageError(sdkError, "read entity ('a', '1')") as Error;
    expect(isStorageRequestError(wrapped)).toBe(true);
    expect(wrapped).toMatchObject({ code: "RequestNotSent", transient: false });
    expect(wrapped.message).toMatch(/^Could not read entity \('a', '1'\): the SDK refused to send the request/);
    expect(wrapped.message).toMatch(/nothing was applied/);
    expect(wrapped.message).not.toMatch(/may or may not/);
  });
});

describe("hints in the library's errors", () => {
  it("a refused connection: nothing listens there", async () => {
    const port = await closedPort();
    const blobs = new BlobServiceClient(
      `http://127.0.0.1:${port}/${ACCOUNT}`,
      new StorageSharedKeyCredential(ACCOUNT, KEY),
      {
        retryOptions: { maxTries: 1 },
      },
    );
    const sdkError = await blobs
      .getContainerClient("reports")
      .getProperties()
      .catch((e: unknown) => e);
    const wrapped = wrapStorageError(sdkError, "read container 'reports'") as Error;
    expect(wrapped.message).toMatch(/ECONNREFUSED: nothing listens there/);
  });

  it("a 403 names what may be missing; a bad name gets the naming rules", () => {
    const forbidden = wrapStorageError(serviceError(403, "AuthorizationPermissionMismatch"), "write blob 'a'") as Error;
    expect(forbidden.message).toMatch(/Retrying will not help: the credential may not do this: .*SAS's permissions/);
    // The request tells which credential was refused: a SAS gets no Entra advice, a Bearer token no SAS advice.
    const refused = (url: string, authorization?: string) => {
      const error = serviceError(403, "AuthorizationPermissionMismatch");
      error.request = createPipelineRequest({
        url,
        headers: createHttpHeaders(authorization ? { authorization } : {}),
      });
      return (wrapStorageError(error, "break the lease on blob 'a'") as Error).message;
    };
    const withSas = refused("https://acct.blob.core.windows.net/c/a?comp=lease&sv=2025-01-05&sig=REDACTED");
    expect(withSas).toMatch(/the SAS may not do this: check its permissions/);
    expect(withSas).not.toMatch(/role|Entra|identity/i);
    const withEntra = refused("https://acct.blob.core.windows.net/c/a?comp=lease", "Bearer REDACTED");
    expect(withEntra).toMatch(/the identity may not do this: check its data role/);
    expect(withEntra).not.toMatch(/SAS/);
    const badName = wrapStorageError(
      serviceError(400, "InvalidResourceName"),
      "create container 'My_Reports'",
    ) as Error;
    expect(badName.message).toMatch(/lower-case letters, digits and single hyphens/);
  });
});
