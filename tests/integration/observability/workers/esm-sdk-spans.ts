/**
 * An ES module application with the standard OpenTelemetry set-up (`node --import
 * examples/support/instrumentation.mjs`: the loader hook and `registerInstrumentations` with the
 * Azure SDK instrumentation, no manual patch): it takes a lock and updates a blob, each inside a
 * request span of its own passed as `tracingOptions`, and prints the spans as one JSON line.
 * Args: <container>
 */
import { BlobServiceClient } from "@azure/storage-blob";
import { context, trace } from "@opentelemetry/api";
import { blobLock } from "../../../../src/lease/index.js";
import { blobJsonCell, optimisticUpdate } from "../../../../src/optimistic/index.js";
// The module the `--import` flag loaded: the same instance, with its exporter.
import { finishedSpans } from "../../../../examples/support/instrumentation.mjs";

const [containerName] = process.argv.slice(2);
const container = BlobServiceClient.fromConnectionString(process.env.ASC_TEST_CONNECTION_STRING!).getContainerClient(
  containerName!,
);
const tracer = trace.getTracer("esm-app");

// The request span is not made active: the library's spans find their parent through tracingOptions alone.
const request = tracer.startSpan("app request");
const tracingOptions = { tracingContext: trace.setSpan(context.active(), request) };
const handle = await blobLock(container, "esm-lock").acquire({ timeoutInMs: 30_000, tracingOptions });
await handle.release();
await optimisticUpdate(blobJsonCell<{ n: number }>(container.getBlockBlobClient("esm.json")), () => ({ n: 1 }), {
  tracingOptions,
});
request.end();
console.log(JSON.stringify({ requestSpanId: request.spanContext().spanId, spans: finishedSpans() }));
