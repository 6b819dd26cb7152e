/**
 * A proxy in front of Azurite's queue endpoint that answers a stale pop receipt as the service
 * documents it, where Azurite answers otherwise (docs/service-conformance.md): "Delete Message"
 * says that when no message with a matching pop receipt is found the service answers 404 (Not
 * Found), in every case where the receipt is no longer valid; Azurite answers 400
 * PopReceiptMismatch. Update Message's page names no code, so `updates: true` (the default) gives
 * it the same 404, the reading under which the consumer's hold has the most to get right.
 *
 * Everything else passes through untouched, so that the explorers can run the consumer's hold
 * against both readings: Azurite's (directly) and the service's (through this proxy). The test
 * set-up works around Azurite here; the library is not told.
 */
import { createServer, request, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** A running proxy: its endpoint (same path as the target) and how to stop it. */
export interface ServiceAnswers {
  readonly endpoint: string;
  /** How many answers it rewrote. */
  readonly rewritten: number;
  close(): Promise<void>;
}

/** Starts the proxy in front of `target` (Azurite's queue endpoint). */
export async function startServiceAnswers(target: string, { updates = true } = {}): Promise<ServiceAnswers> {
  const upstream = new URL(target);
  let rewritten = 0;
  const server = createServer((req, res) => {
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer: IncomingMessage) => {
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () => {
          const staleReceipt =
            answer.statusCode === 400 &&
            answer.headers["x-ms-error-code"] === "PopReceiptMismatch" &&
            /\/messages\/[^/?]+\?/.test(req.url ?? "") &&
            (req.method === "DELETE" || (updates && req.method === "PUT"));
          if (!staleReceipt) {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(chunks));
            return;
          }
          rewritten += 1;
          const body =
            '<?xml version="1.0" encoding="utf-8"?><Error><Code>MessageNotFound</Code>' +
            "<Message>The specified message does not exist.</Message></Error>";
          res.writeHead(404, {
            "content-type": "application/xml",
            "x-ms-error-code": "MessageNotFound",
            "x-ms-request-id": String(answer.headers["x-ms-request-id"] ?? ""),
            "content-length": Buffer.byteLength(body),
          });
          res.end(body);
        });
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/$/, "")}`,
    get rewritten() {
      return rewritten;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
