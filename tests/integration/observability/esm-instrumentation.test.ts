/**
 * The Azure SDK's own spans nest under the library's in an ES module application set up the
 * standard way (issue 23): `node --import examples/support/instrumentation.mjs` registers the
 * loader hook and the Azure SDK instrumentation with `registerInstrumentations`, nothing patched
 * by hand. And `tracingOptions` passed to the library's operations, as to the Azure SDK's, makes
 * the caller's span the parent of the library's span, under which the SDK's spans go.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ContainerClient } from "@azure/storage-blob";
import { spawnNodeProcess } from "../../../tools/internal/processes.js";
import { ATTR, SPAN } from "../../../src/observability/names.js";
import { blobService, uniqueName } from "../../support/storage.js";

const here = dirname(fileURLToPath(import.meta.url));
const WORKER = `${here}/workers/esm-sdk-spans.ts`;
const INSTRUMENTATION = resolve(here, "../../../examples/support/instrumentation.mjs");

interface Span {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Record<string, unknown>;
}

let container: ContainerClient;
beforeAll(async () => {
  container = blobService().getContainerClient(uniqueName("otelesm"));
  await container.create();
});
afterAll(async () => {
  await container.delete();
});

it("ESM with registerInstrumentations: the SDK's spans under the library's, the library's under the caller's", async () => {
  const worker = spawnNodeProcess(WORKER, [
    "--import",
    "tsx",
    "--import",
    INSTRUMENTATION,
    WORKER,
    container.containerName,
  ]);
  const { requestSpanId, spans } = await worker.waitFor<{ requestSpanId: string; spans: Span[] }>(
    (m) => Array.isArray(m.spans),
    60_000,
  );
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const parentOf = (span: Span) => (span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId));
  const under = (span: Span, ancestor: Span): boolean => {
    const parent = parentOf(span);
    return parent !== undefined && (parent === ancestor || under(parent, ancestor));
  };

  for (const name of [SPAN.lockAcquire, SPAN.optimisticUpdate]) {
    const ours = spans.find((s) => s.name === name);
    if (!ours) throw new Error(`no ${name} span among: ${spans.map((s) => s.name).join(", ")}`);
    // tracingOptions: the caller's request span is the parent (it was never the active span).
    expect(ours.parentSpanId).toBe(requestSpanId);
    expect(ours.attributes).toMatchObject({
      [ATTR.resourceKind]: "blob",
      [ATTR.resourceContainer]: container.containerName,
    });
    // The SDK's operation spans (BlockBlobClient-..., BlobLeaseClient-...) and HTTP requests under it.
    const sdk = spans.filter((s) => under(s, ours) && s !== ours);
    expect(sdk.some((s) => /^(Blob|BlockBlob|BlobLease|Container)\w*Client-/.test(s.name))).toBe(true);
    expect(sdk.some((s) => /^HTTP (GET|PUT|HEAD)$/.test(s.name))).toBe(true);
    expect(new Set(sdk.map((s) => s.traceId))).toEqual(new Set([ours.traceId]));
  }
  await worker.kill();
}, 90_000);
