/**
 * The shape of the facts the service conformance suite replays: behaviours of Azure Blob, Queue and
 * Table storage that the library depends on, each a short sequence of REST requests with the
 * answers the real service gave (or its reference pages describe), and where that knowledge comes
 * from. The suite sends the same requests to Azurite (`npm test`) or to a real account
 * (`npm run test:live`) and compares.
 *
 * Placeholders in paths, headers, bodies and expected answers, filled in per behaviour by
 * `./replay.ts`: `{c}`, `{q}`, `{t}` are the behaviour's fresh container, queue and table names;
 * `{A}`, `{B}` and `{C}` are fresh lease ids standing in for the ones the recorded tests generated; any
 * other `{name}` is a value captured from an earlier answer.
 */
import type { RestService } from "../../support/storage-rest.js";

/** A recorded session of the real service: a test recording in one of the Azure SDK repositories. */
export interface Recording {
  /** `Azure/azure-sdk-for-js` or `Azure/azure-sdk-for-python`. */
  readonly repo: string;
  /** The recording's path in the repository. */
  readonly path: string;
  /** The commit of the stored version read. */
  readonly commit: string;
}

/** Where a behaviour's expected answers come from. */
export type Source =
  /** Recorded from the real service. */
  | { readonly recording: Recording }
  /** A REST reference page, and what it says that the behaviour follows. */
  | { readonly page: string; readonly says: string }
  /** Neither: why the expectation is what it is. */
  | { readonly unbacked: string };

/** Where the service's answer carries the error code. */
export type CodeAt =
  /** The `x-ms-error-code` header (Blob and Queue; the XML body repeats it). */
  | "header"
  /** The JSON body's `odata.error.code` (Table: the service sends no `x-ms-error-code`). */
  | "odata";

/** What one answer must be. */
export interface Expectation {
  /** The HTTP status. */
  readonly status: number;
  /** The service error code (none when absent), where the service puts it (by default: Blob and Queue in the header, Table in the JSON body). */
  readonly code?: string;
  /**
   * Response headers: a value (placeholders allowed), `"!value"` for any other value, `"*"` for
   * any value, `null` for absent.
   */
  readonly answers?: Readonly<Record<string, string | null>>;
  /** Texts the body must contain (placeholders allowed), e.g. a batch's inner status line. */
  readonly bodyHas?: readonly string[];
}

/** A REST request and the answer expected. */
export interface RequestStep extends Expectation {
  /** The service; the behaviour's own when absent. */
  readonly service?: RestService;
  /** `METHOD path[?query]`, relative to the service's endpoint, with placeholders. */
  readonly req: string;
  /** The request headers that matter (placeholders allowed). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request body, as text (placeholders allowed). */
  readonly body?: string;
  /** Milliseconds of real time to let pass before the request (lease expiry, visibility timeouts). */
  readonly waitMs?: number;
  /**
   * Send with a service SAS for the behaviour's queue or table instead of the account key, with these
   * permissions (letters as the SAS carries them: `raup`, `raud`); `badSignature` spoils it.
   */
  readonly sas?: { readonly permissions: string; readonly badSignature?: boolean };
  /**
   * Values to remember for later placeholders: `header:<name>`, or `xml:<Element>` (the first
   * element of that name in the body).
   */
  readonly capture?: Readonly<Record<string, string>>;
  /**
   * Where Azurite answers otherwise than the service: what it answers instead, and why that does not
   * matter to the library (or what the library does about it). Used on Azurite only; live runs hold
   * the service's answer.
   */
  readonly azurite?: Partial<Expectation> & { readonly why: string };
}

/** What exists before the steps. */
export type Given =
  "nothing" | "container" | "container+blob" | "queue" | "queue+message" | "queue+received" | "table" | "table+entity";

/** Which part of the library depends on the behaviour. */
export type Feature =
  "optimistic" | "lease" | "election" | "table-lock" | "queue-consumer" | "idempotency" | "tables" | "retry";

/** One behaviour of the service: a named sequence of requests and where their answers come from. */
export interface Behaviour {
  readonly name: string;
  readonly service: RestService;
  /** The library's features that branch on these answers. */
  readonly features: readonly Feature[];
  readonly source: Source;
  readonly given: Given;
  readonly steps: readonly RequestStep[];
}

/** How a behaviour is backed. */
export function backingOf(behaviour: { readonly source: Source }): "recording" | "page" | "unbacked" {
  return "recording" in behaviour.source ? "recording" : "page" in behaviour.source ? "page" : "unbacked";
}

/** True when some step of the behaviour records an Azurite difference. */
export function differsOnAzurite(behaviour: Behaviour): boolean {
  return behaviour.steps.some((step) => step.azurite !== undefined);
}
