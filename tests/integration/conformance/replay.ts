/**
 * Replays one behaviour against a storage account over plain REST (no SDK in between: the request
 * is the fact's request) and lists every answer that differs from the expected one. On Azurite, a
 * step's recorded Azurite difference (`azurite`) replaces the service's answer, and is reported as
 * a note, so that the suite fails when Azurite starts to answer like the service (then the
 * difference, and the docs about it, can go).
 */
import { randomUUID } from "node:crypto";
import { AzureNamedKeyCredential, generateTableSas } from "@azure/data-tables";
import { generateQueueSASQueryParameters, QueueSASPermissions, StorageSharedKeyCredential } from "@azure/storage-queue";
import { sendRest, type RestAccount, type RestAnswer, type RestService } from "../../support/storage-rest.js";
import { CLEANUP, SETUP } from "./steps.js";
import type { Behaviour, Expectation, RequestStep } from "./types.js";

/** Where the behaviour runs. */
export interface ReplayTarget {
  readonly account: RestAccount;
  /** `"azurite"`: recorded Azurite differences apply; `"live"`: only the service's answers count. */
  readonly kind: "azurite" | "live";
  /** Fresh resource names (container, queue, table), unique to this behaviour. */
  readonly names: { readonly c: string; readonly q: string; readonly t: string };
}

/** The outcome of one replay. */
export interface ReplayResult {
  /** Answers that differ from the expected ones (empty: the behaviour holds). */
  readonly differences: readonly string[];
  /** Steps where Azurite's recorded difference was expected instead of the service's answer. */
  readonly azuriteDifferences: number;
  /** Milliseconds the replay took. */
  readonly elapsedMs: number;
}

/** Replays `behaviour` (after its `given` set-up), then deletes what it created. */
export async function replay(behaviour: Behaviour, target: ReplayTarget): Promise<ReplayResult> {
  const started = performance.now();
  const values = new Map<string, string>([
    ["c", target.names.c],
    ["q", target.names.q],
    ["t", target.names.t],
    ["A", randomUUID()],
    ["B", randomUUID()],
    ["C", randomUUID()],
    ["tableEndpoint", target.account.endpoints.table],
  ]);
  // `{name}` is the value; `{name:url}` the value percent-encoded (for a query string).
  const fill = (text: string) =>
    text.replace(/\{(\w+)(:url)?\}/g, (whole, name: string, url?: string) => {
      const value = values.get(name);
      if (value === undefined) return `<${name} not captured>`;
      return url ? encodeURIComponent(value) : value;
    });
  const differences: string[] = [];
  let azuriteDifferences = 0;
  const steps = [...SETUP[behaviour.given], ...behaviour.steps];
  try {
    for (const [index, step] of steps.entries()) {
      if (step.waitMs) await new Promise((resolve) => setTimeout(resolve, step.waitMs));
      const service = step.service ?? behaviour.service;
      const answer = await send(target.account, service, step, fill);
      const override = target.kind === "azurite" ? step.azurite : undefined;
      if (override) azuriteDifferences += 1;
      const expected: Expectation = override ? { ...step, ...override } : step;
      const where = `step ${index + 1} (${step.req})`;
      differences.push(...compare(service, expected, answer, fill).map((d) => `${where}: ${d}`));
      for (const [name, from] of Object.entries(step.capture ?? {})) {
        const value = captured(answer, from);
        if (value !== undefined) values.set(name, value);
      }
      // A set-up that failed makes every later step meaningless.
      if (index < SETUP[behaviour.given].length && differences.length > 0) break;
    }
  } finally {
    for (const step of CLEANUP) {
      await send(target.account, step.service!, step, fill).catch(() => undefined);
    }
  }
  return { differences, azuriteDifferences, elapsedMs: performance.now() - started };
}

function send(
  account: RestAccount,
  service: RestService,
  step: RequestStep,
  fill: (text: string) => string,
): Promise<RestAnswer> {
  const [method, ...rest] = step.req.split(" ");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(step.headers ?? {})) headers[name] = fill(value);
  if (step.sas) account = { ...account, key: undefined, sas: serviceSas(account, service, step.sas, fill) };
  return sendRest(account, service, {
    method: method!,
    path: fill(rest.join(" ")),
    headers,
    ...(step.body === undefined ? {} : { body: fill(step.body) }),
  });
}

/** A service SAS for the behaviour's queue or table, signed with the account key. */
function serviceSas(
  account: RestAccount,
  service: RestService,
  { permissions, badSignature = false }: NonNullable<RequestStep["sas"]>,
  fill: (text: string) => string,
): string {
  if (!account.key) throw new Error("A SAS step needs the account key (the connection string carries a SAS).");
  const expiresOn = new Date(Date.now() + 3_600_000);
  let sas: string;
  if (service === "queue") {
    sas = generateQueueSASQueryParameters(
      { queueName: fill("{q}"), permissions: QueueSASPermissions.parse(permissions), expiresOn },
      new StorageSharedKeyCredential(account.name, account.key),
    ).toString();
  } else if (service === "table") {
    const letters = new Set(permissions);
    sas = generateTableSas(fill("{t}"), new AzureNamedKeyCredential(account.name, account.key), {
      expiresOn,
      permissions: {
        query: letters.has("r"),
        add: letters.has("a"),
        update: letters.has("u"),
        delete: letters.has("d"),
      },
    }).replace(/^\?/, "");
  } else {
    throw new Error("SAS steps are written for queues and tables only.");
  }
  return badSignature ? sas.replace(/sig=[^&]+/, "sig=AAAA") : sas;
}

/**
 * The error code an answer carries, where the service puts it: Blob and Queue in `x-ms-error-code`;
 * Table in the body only (`odata.error.code` in JSON, `<code>` when the answer is XML).
 */
export function codeOf(service: RestService, answer: RestAnswer): string | undefined {
  if (service !== "table") return answer.headers.get("x-ms-error-code") ?? undefined;
  const text = answer.body.toString("utf8").replace(/^\uFEFF/, "");
  if (text.startsWith("{")) {
    try {
      return (JSON.parse(text) as { "odata.error"?: { code?: string } })["odata.error"]?.code;
    } catch {
      return undefined;
    }
  }
  return /<code>([^<]*)<\/code>/i.exec(text)?.[1];
}

function compare(
  service: RestService,
  expected: Expectation,
  answer: RestAnswer,
  fill: (text: string) => string,
): string[] {
  const differences: string[] = [];
  const code = codeOf(service, answer);
  if (answer.status !== expected.status || code !== expected.code) {
    differences.push(
      `answered ${answer.status} ${code ?? ""}, expected ${expected.status} ${expected.code ?? ""}`.trimEnd(),
    );
  }
  for (const [name, want] of Object.entries(expected.answers ?? {})) {
    const actual = answer.headers.get(name);
    const ok =
      want === null
        ? actual === null
        : want === "*"
          ? actual !== null
          : want.startsWith("!")
            ? actual !== null && actual !== fill(want.slice(1))
            : actual === fill(want);
    if (!ok) differences.push(`${name}: ${actual ?? "(absent)"}, expected ${want === null ? "(absent)" : fill(want)}`);
  }
  const body = answer.body.toString("utf8");
  for (const text of expected.bodyHas ?? []) {
    if (!body.includes(fill(text))) differences.push(`body lacks ${JSON.stringify(fill(text))}`);
  }
  return differences;
}

function captured(answer: RestAnswer, from: string): string | undefined {
  const [kind, name] = from.split(":") as [string, string];
  if (kind === "header") return answer.headers.get(name) ?? undefined;
  if (kind === "xml") return new RegExp(`<${name}>([^<]*)</${name}>`).exec(answer.body.toString("utf8"))?.[1];
  throw new Error(`Unknown capture '${from}'.`);
}
