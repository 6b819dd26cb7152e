/**
 * An HTTP endpoint that is safe to retry: `POST /payments` with an `Idempotency-Key` header.
 *
 * The handler is wrapped in `idempotent()` on a Table inbox. A client whose answer was lost sends
 * the same request again and gets the first answer, and the card was charged once; a request that
 * reuses a key with another body is refused (422); a duplicate that arrives while the first one is
 * still running is told to try later (409). Each charge's ledger row is written in the same entity
 * group transaction as the key's done record, so it exists exactly once.
 *
 * Keys are scoped per tenant: the record is looked up by the authenticated tenant and the key
 * together, never by the client's key alone. Otherwise another tenant could send the same key and
 * get this tenant's stored answer (its charge id, its amount), or squat a key before its owner uses
 * it. The tenant comes from the caller's verified identity (here a header stands in for the token's
 * claim); never from the body. And the stored answer is plain JSON in the inbox table, not
 * encrypted: it holds no card number and no secret.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { TableClient, type TransactionAction } from "@azure/data-tables";
import { compositeKey } from "azure-storage-concurrency/tables";
import {
  idempotent,
  isIdempotencyInProgressError,
  isIdempotencyPayloadMismatchError,
  TableIdempotencyStore,
} from "azure-storage-concurrency/idempotency";
import { runIfMain, type ExampleContext } from "./support/run-example.js";

export const title = "idempotent(): an HTTP handler that is safe to retry";

interface Payment {
  /** Who is calling, from the verified identity (an Entra ID token's `tid`, an API key's owner): never from the body. */
  tenantId: string;
  idempotencyKey: string;
  customerId: string;
  amount: number;
}

export async function main({ connectionString, log }: ExampleContext): Promise<void> {
  const inbox = TableClient.fromConnectionString(connectionString, `payments${Date.now().toString(36)}`, {
    allowInsecureConnection: true,
  });
  await inbox.createTable();

  // The payment provider: slow, and it must not be called twice for one payment. (Its first call
  // lasts until the copy below was answered, so that the two overlap whatever the machine's load.)
  let providerCalls = 0;
  let providerCalled!: () => void;
  const firstCallStarted = new Promise<void>((resolve) => (providerCalled = resolve));
  let copyAnswered!: () => void;
  const firstCallMayEnd = new Promise<void>((resolve) => (copyAnswered = resolve));
  const chargeCard = async (payment: Payment, abortSignal: AbortSignal) => {
    providerCalls += 1;
    providerCalled();
    if (providerCalls === 1) await firstCallMayEnd;
    abortSignal.throwIfAborted();
    return { chargeId: `ch-${providerCalls}-${payment.customerId}` };
  };

  const pay = idempotent<Payment, { chargeId: string; amount: number }, TransactionAction>(
    async (payment, { abortSignal, addEffects, partitionKey }) => {
      const { chargeId } = await chargeCard(payment, abortSignal);
      // The ledger row commits with the key's done record: exactly once.
      addEffects(["create", { partitionKey, rowKey: "ledger", chargeId, amount: payment.amount }]);
      return { chargeId, amount: payment.amount };
    },
    {
      store: new TableIdempotencyStore(inbox),
      // One tenant's key is not another's: compositeKey escapes each part, so no two pairs collide.
      key: (payment) => compositeKey([payment.tenantId, payment.idempotencyKey]),
      // What makes two requests the same: not the key itself.
      payload: ({ customerId, amount }) => ({ customerId, amount }),
    },
  );

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    const idempotencyKey = request.headers["idempotency-key"];
    // Stands in for authentication: in production, the tenant of the verified token or API key.
    const tenantId = request.headers["x-tenant"];
    if (typeof tenantId !== "string") return reply(401, { error: "who is calling?" });
    if (request.method !== "POST" || request.url !== "/payments" || typeof idempotencyKey !== "string")
      return reply(400, { error: "POST /payments with an Idempotency-Key header" });
    let text = "";
    for await (const chunk of request) text += String(chunk);
    const { customerId, amount } = JSON.parse(text) as { customerId: string; amount: number };
    try {
      reply(201, await pay({ tenantId, idempotencyKey, customerId, amount }));
    } catch (error) {
      if (isIdempotencyPayloadMismatchError(error)) return reply(422, { error: error.message });
      if (isIdempotencyInProgressError(error)) return reply(409, { error: "in progress, retry later" });
      reply(500, { error: String(error) });
    }
  };
  const server = createServer((request, response) => void handle(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/payments`;
  const post = async (key: string, body: { customerId: string; amount: number }, tenant = "contoso") => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key, "x-tenant": tenant },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  try {
    // Two copies of one request at once (a client that timed out and retried immediately).
    const answer = post("key-1", { customerId: "c-7", amount: 25 });
    await firstCallStarted;
    const concurrent = await post("key-1", { customerId: "c-7", amount: 25 });
    copyAnswered();
    const first = await answer;
    log(`first request: ${first.status} ${JSON.stringify(first.body)}`);
    log(`a copy sent while it ran: ${concurrent.status} ${JSON.stringify(concurrent.body)}`);

    // The client never saw the first answer: it sends the request again, later.
    const retry = await post("key-1", { customerId: "c-7", amount: 25 });
    log(`the retry: ${retry.status} ${JSON.stringify(retry.body)} (the stored answer)`);

    // A bug in a client reuses the key for another payment.
    const reused = await post("key-1", { customerId: "c-7", amount: 99 });
    log(`the key reused for another amount: ${reused.status}`);

    const other = await post("key-2", { customerId: "c-8", amount: 40 });
    log(`another payment: ${other.status} ${JSON.stringify(other.body)}`);

    // Another tenant that happens to send the same key: its own payment, not contoso's stored answer.
    const otherTenant = await post("key-1", { customerId: "f-1", amount: 25 }, "fabrikam");
    log(`another tenant with the same key: ${otherTenant.status} ${JSON.stringify(otherTenant.body)}`);

    let ledgerRows = 0;
    for await (const _row of inbox.listEntities({ queryOptions: { filter: "RowKey eq 'ledger'" } })) ledgerRows += 1;
    log(`the provider was called ${providerCalls} times; ${ledgerRows} ledger rows`);
    const ok =
      first.status === 201 &&
      concurrent.status === 409 &&
      retry.status === 201 &&
      retry.body["chargeId"] === first.body["chargeId"] &&
      reused.status === 422 &&
      other.status === 201 &&
      otherTenant.status === 201 &&
      otherTenant.body["chargeId"] !== first.body["chargeId"] &&
      providerCalls === 3 &&
      ledgerRows === 3;
    if (!ok) throw new Error("a payment was charged twice, a duplicate was not recognised, or tenants shared a key");
  } finally {
    server.close();
    await inbox.deleteTable();
  }
}

runIfMain(import.meta.url, { title, main });
