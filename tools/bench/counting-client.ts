/**
 * For the benchmarks' worker processes: a container client whose every HTTP request is counted by
 * kind (`head-leased`, `acquire-409`, `list-200`, …), last in the SDK's pipeline (after its retries:
 * one count per request on the wire). What the contention rounds report as the cost of waiting.
 */
import { BlobServiceClient, newPipeline, type ContainerClient, type StoragePipelineOptions } from "@azure/storage-blob";
import { statusOf } from "azure-storage-concurrency/errors";

/** The kind of a request: `head`, the lease action (`acquire`, `release`, …), `metadata`, `list`, or the method. */
function kindOf(request: { method: string; url: string; headers: { get(name: string): string | undefined } }) {
  if (request.method === "HEAD") return "head";
  if (request.url.includes("comp=lease")) return request.headers.get("x-ms-lease-action") ?? "lease";
  if (request.url.includes("comp=metadata")) return "metadata";
  if (request.url.includes("comp=list")) return "list";
  return request.method.toLowerCase();
}

/**
 * A client of container `containerName` on `connectionString` that counts its requests into `kinds`
 * (`options`: the SDK pipeline's, such as its retries).
 *
 * `markRecordReads`: a read (HEAD) sent after a granted acquire and before the next lease action
 * is counted as `record-<kind>` (`record-head-leased`): the lock's record write falling back to
 * reading the record under its new lease (its conditional write found that someone else wrote a
 * record since), a request that takes a free lock, not one that waits for it.
 */
export function countingContainer(
  connectionString: string,
  containerName: string,
  kinds: Record<string, number>,
  options: StoragePipelineOptions = {},
  { markRecordReads = false } = {},
): ContainerClient {
  const base = BlobServiceClient.fromConnectionString(connectionString);
  const pipeline = newPipeline(base.credential, options);
  const count = (kind: string) => void (kinds[kind] = (kinds[kind] ?? 0) + 1);
  let granted = false; // an acquire was granted, and no lease action was sent since
  pipeline.factories.push({
    create: (next) => ({
      sendRequest: async (request) => {
        const kind = kindOf(request);
        const lease = request.url.includes("comp=lease");
        const what = markRecordReads && granted && !lease && kind === "head" ? "record-head" : kind;
        if (lease) granted = false;
        try {
          const response = await next.sendRequest(request);
          count(
            `${what}-${kind === "head" ? (response.headers.get("x-ms-lease-state") ?? response.status) : response.status}`,
          );
          if (lease && kind === "acquire" && response.status === 201) granted = true;
          return response;
        } catch (error) {
          count(`${what}-${statusOf(error) ?? "failed"}`); // error statuses (a 409 on acquire) arrive as errors
          throw error;
        }
      },
    }),
  });
  return new BlobServiceClient(base.url, pipeline).getContainerClient(containerName);
}
