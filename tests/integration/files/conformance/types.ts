/**
 * The shape of the facts the Files conformance suite replays against the responder: behaviours of
 * the Azure Files service, each a short sequence of requests with the answers the service gave (or
 * its reference pages describe), and where that knowledge comes from.
 *
 * Placeholders in paths, headers and expected answers, filled in per behaviour by `./replay.ts`:
 * `{guid}` is the fixed lease id of the SDK's tests (`e9890485-bf47-4d9a-b3d0-aceb18506124`);
 * `{A}` and `{B}` are fresh lease ids standing in for the ones the SDK generated at random (the
 * recorder left those out of the recordings; the SDK test named in the source says which request
 * carried which); any other `{name}` is a value captured from an earlier answer.
 */

/** Where a behaviour's expected answers come from. */
export type Source =
  /**
   * A recorded session of the real service, in Azure/azure-sdk-for-js under
   * `sdk/storage/storage-file-share/recordings/`, and the SDK test (`test/leaseclient.spec.ts`,
   * `test/fileclient.spec.ts`) that made it, for the request headers the recorder left out.
   */
  | { readonly recording: string; readonly test: string }
  /** A REST reference page, and what it says that the behaviour follows. */
  | { readonly page: string; readonly says: string }
  /** Neither: why the responder answers as it does. */
  | { readonly unbacked: string };

/** A FileREST request and the answer expected. */
export interface RequestStep {
  /**
   * `METHOD target[?query]`: the target is `share`, `dir`, `file` (the behaviour's share, its
   * directory, the file in it) or `nodir/file` (a file in a directory that does not exist).
   */
  readonly req: string;
  /** The request headers that matter (placeholders allowed). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request body, as text. */
  readonly body?: string;
  /** Milliseconds the responder's clock moves on before the request. */
  readonly wait?: number;
  /** The HTTP status answered. */
  readonly status: number;
  /** The `x-ms-error-code` answered (none when absent). */
  readonly code?: string;
  /**
   * Response headers expected: a value (placeholders allowed), `"!value"` for any other value,
   * `"*"` for any value, `null` for absent.
   */
  readonly answers?: Readonly<Record<string, string | null>>;
  /** The response body expected, base64 (as the recordings store it). */
  readonly bodyBase64?: string;
  /** Response headers to remember under a name, for later placeholders. */
  readonly capture?: Readonly<Record<string, string>>;
}

/** What a simulated SMB client does to the behaviour's file (responder hooks; no recording has SMB). */
export interface SmbStep {
  readonly smb:
    | {
        readonly open: { readonly read?: boolean; readonly write?: boolean; readonly delete?: boolean };
        readonly share?: { readonly read?: boolean; readonly write?: boolean; readonly delete?: boolean };
        /** The SMB open itself is refused (a sharing violation on the SMB side). */
        readonly refused?: boolean;
      }
    | "deleteOnClose"
    | "closeAll";
}

/** One step of a behaviour. */
export type Step = RequestStep | SmbStep;

/** What exists before the steps (the SDK tests' `beforeEach`, itself recorded and replayed). */
export type Given = "share" | "share+dir" | "share+dir+file";

/** One behaviour of the service: a named sequence of steps and where its answers come from. */
export interface Behaviour {
  readonly name: string;
  readonly source: Source;
  readonly given: Given;
  readonly steps: readonly Step[];
}

/** How a behaviour is backed. */
export function backingOf(behaviour: Behaviour): "recording" | "page" | "unbacked" {
  return "recording" in behaviour.source ? "recording" : "page" in behaviour.source ? "page" : "unbacked";
}
