// Starts one real Azurite for the integration tests, on free ports (data in a temporary folder), and hands its
// endpoints to the test workers through environment variables (workers are forked after this runs).
// Plain JavaScript that loads the TypeScript launcher through tsx, because jest's global setup
// runs outside jest's module system.
import { tsImport } from "tsx/esm/api";

export default async function globalSetup() {
  const { startAzurite } = await tsImport("../../src/testing/azurite.ts", import.meta.url);
  const azurite = await startAzurite();
  globalThis.__ASC_AZURITE__ = azurite;
  process.env.ASC_TEST_CONNECTION_STRING = azurite.connectionString;
  process.env.ASC_TEST_BLOB_ENDPOINT = azurite.blobEndpoint;
  process.env.ASC_TEST_QUEUE_ENDPOINT = azurite.queueEndpoint;
  process.env.ASC_TEST_TABLE_ENDPOINT = azurite.tableEndpoint;
}
