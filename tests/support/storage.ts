/**
 * What integration tests need to reach the Azurite that global-setup started: its connection
 * string, SDK clients with short SDK retry delays, unique resource names, and fault proxies.
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
import {
  AZURITE_ACCOUNT_KEY,
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

/** A name no other test uses: lowercase letters and digits, valid for containers, queues and tables. */
export function uniqueName(prefix: string): string {
  return `${prefix.replace(/[^a-z0-9]/gi, "").toLowerCase()}${randomBytes(5).toString("hex")}`.slice(0, 63);
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
  const credential = new StorageSharedKeyCredential("devstoreaccount1", AZURITE_ACCOUNT_KEY);
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

/** Starts a fault proxy in front of one of Azurite's services; gives it and a connection string through it. */
export async function faultProxyFor(
  service: "blob" | "queue" | "table",
  options: Omit<FaultProxyOptions, "target"> = {},
): Promise<{ proxy: FaultProxy; connectionString: string }> {
  const proxy = await createFaultProxy({ target: endpoints()[service], ...options });
  return { proxy, connectionString: buildConnectionString({ [`${service}Endpoint`]: proxy.endpoint }) };
}
