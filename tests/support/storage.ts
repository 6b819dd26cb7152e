/**
 * What integration tests need to reach the Azurite that global-setup started (or, under
 * `npm run test:live`, the real account: see ./target.ts): its connection string, SDK clients with
 * short SDK retry delays, unique resource names, and fault proxies (Azurite only).
 */
import { randomBytes } from "node:crypto";
import { BlobServiceClient, type StoragePipelineOptions } from "@azure/storage-blob";
import { TableClient, type TableServiceClientOptions } from "@azure/data-tables";
import {
  generateQueueSASQueryParameters,
  QueueClient,
  QueueSASPermissions,
  QueueServiceClient,
  StorageSharedKeyCredential,
  type StoragePipelineOptions as QueuePipelineOptions,
} from "@azure/storage-queue";
import { restAccountOf } from "./storage-rest.js";
import { storageTarget } from "./target.js";
import {
  buildConnectionString,
  createFaultProxy,
  type FaultProxy,
  type FaultProxyOptions,
} from "../../src/testing/index.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: integration tests run under jest's global setup (npm test).`);
  return value;
}

/** Azurite's connection string for this test run. */
export const connectionString = (): string => env("ASC_TEST_CONNECTION_STRING");
/** Azurite's endpoints for this test run. */
export const endpoints = () => ({
  blob: env("ASC_TEST_BLOB_ENDPOINT"),
  queue: env("ASC_TEST_QUEUE_ENDPOINT"),
  table: env("ASC_TEST_TABLE_ENDPOINT"),
});

/** SDK retry settings with the SDK's real retry logic but millisecond delays, to keep tests quick. */
export const quickSdkRetries = {
  storage: { maxTries: 4, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
  tables: { maxRetries: 3, retryDelayInMs: 10, maxRetryDelayInMs: 50 },
} as const;

/**
 * A name no other test uses: lowercase letters and digits, valid for containers, queues and tables.
 * Under `npm run test:live` it starts with the run's prefix (ASC_RUN_PREFIX), so that the run's
 * teardown can find and delete everything the run created.
 */
export function uniqueName(prefix: string): string {
  const run = process.env.ASC_RUN_PREFIX ?? "";
  return `${run}${prefix.replace(/[^a-z0-9]/gi, "").toLowerCase()}${randomBytes(5).toString("hex")}`.slice(0, 63);
}

/** A blob service client on `cs` (Azurite by default) with quick SDK retries. */
export function blobService(cs = connectionString(), options: StoragePipelineOptions = {}): BlobServiceClient {
  return BlobServiceClient.fromConnectionString(cs, { retryOptions: quickSdkRetries.storage, ...options });
}

/** A queue service client on `cs` (Azurite by default) with quick SDK retries. */
export function queueService(cs = connectionString(), options: QueuePipelineOptions = {}): QueueServiceClient {
  return QueueServiceClient.fromConnectionString(cs, { retryOptions: quickSdkRetries.storage, ...options });
}

/**
 * A client for queue `name` whose credential is a queue-scoped SAS with `permissions` (`r`, `a`,
 * `u`, `p`), valid for an hour; `badSignature` spoils its signature (a refused credential).
 */
export function queueSasClient(name: string, permissions: string, { badSignature = false } = {}): QueueClient {
  const account = restAccountOf(connectionString());
  if (!account.key) throw new Error("queueSasClient needs an account key in the connection string, not a SAS.");
  const credential = new StorageSharedKeyCredential(account.name, account.key);
  const sas = generateQueueSASQueryParameters(
    {
      queueName: name,
      permissions: QueueSASPermissions.parse(permissions),
      expiresOn: new Date(Date.now() + 3_600_000),
    },
    credential,
  ).toString();
  return new QueueClient(
    `${queueService().url}/${name}?${badSignature ? sas.replace(/sig=[^&]+/, "sig=AAAA") : sas}`,
    undefined,
    { retryOptions: quickSdkRetries.storage },
  );
}

/** A table client on `cs` (Azurite by default) with quick SDK retries, allowed over http. */
export function tableClient(
  tableName: string,
  cs = connectionString(),
  options: TableServiceClientOptions = {},
): TableClient {
  return TableClient.fromConnectionString(cs, tableName, {
    allowInsecureConnection: true,
    retryOptions: quickSdkRetries.tables,
    ...options,
  });
}

/**
 * Starts a fault proxy in front of one of Azurite's services; gives it and a connection string
 * through it. Azurite only: a real account signs and serves its requests under its own host name
 * over HTTPS, which a plain-HTTP proxy on 127.0.0.1 cannot stand in for; the titles of tests that
 * use it end with `[Azurite only]` (./target.ts), and the live run leaves them out.
 */
export async function faultProxyFor(
  service: "blob" | "queue" | "table",
  options: Omit<FaultProxyOptions, "target"> = {},
): Promise<{ proxy: FaultProxy; connectionString: string }> {
  if (storageTarget === "live") {
    throw new Error(
      "faultProxyFor needs Azurite: mark the test itAzuriteOnly or describeAzuriteOnly (tests/support/target.ts).",
    );
  }
  const proxy = await createFaultProxy({ target: endpoints()[service], ...options });
  return { proxy, connectionString: buildConnectionString({ [`${service}Endpoint`]: proxy.endpoint }) };
}
