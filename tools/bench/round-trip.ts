/**
 * Closer to Azure than localhost: Azurite on the same machine answers in well under a millisecond,
 * which makes every collision window tiny and every backoff look cheap. The contention scenarios run
 * a second time through the fault proxy (src/testing/fault-proxy.ts) holding every request for an
 * Azure-like round trip (`roundTripMs`, ± 30% jitter), and the report charts both curves.
 */
import { createFaultProxy, type FaultProxy } from "azure-storage-concurrency/testing";

/** The endpoints of a connection string that the proxy can stand in front of. */
const ENDPOINT_KEYS = ["BlobEndpoint", "QueueEndpoint", "TableEndpoint"] as const;

/** The jitter, as a share of the round trip. */
const JITTER = 0.3;

/**
 * Runs `measure` with a connection string whose blob, queue and table endpoints go through proxies
 * adding `roundTripMs` (± 30%) to every request, and closes the proxies after it. Only for http
 * endpoints (an embedded Azurite): on an account the round trip is already real.
 */
export async function withRoundTrip<T>(
  connectionString: string,
  roundTripMs: number,
  measure: (connectionString: string) => Promise<T>,
): Promise<T> {
  const proxies: FaultProxy[] = [];
  let through = connectionString;
  try {
    for (const key of ENDPOINT_KEYS) {
      const endpoint = new RegExp(`(?:^|;)${key}=([^;]+)`).exec(connectionString)?.[1];
      if (endpoint === undefined) continue;
      const proxy = await createFaultProxy({
        target: endpoint,
        rules: [{ action: { type: "delay", delayInMs: roundTripMs, jitterInMs: roundTripMs * JITTER } }],
      });
      proxies.push(proxy);
      // Requests are counted in code, not by the proxy: forget them as they come, so that the log stays small.
      proxy.clearLog();
      through = through.replace(`${key}=${endpoint}`, `${key}=${proxy.endpoint}`);
    }
    const timer = setInterval(() => proxies.forEach((p) => p.clearLog()), 1_000).unref();
    try {
      return await measure(through);
    } finally {
      clearInterval(timer);
    }
  } finally {
    await Promise.all(proxies.map((p) => p.close()));
  }
}
