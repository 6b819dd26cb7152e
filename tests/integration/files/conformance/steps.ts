/**
 * Shorthands for the requests the facts are made of, and the recorded setup every behaviour starts
 * from. Each shorthand stands for exactly the headers it names: nothing is added.
 */
import type { Given, RequestStep } from "./types.js";

/** `x-ms-lease-action` and the headers that go with it. */
export function lease(action: string, more: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { "x-ms-lease-action": action, ...more };
}

/** Lease headers of an acquire with a proposed id; the duration is -1 (infinite) unless given. */
export const acquire = (id: string, duration = "-1") =>
  lease("acquire", { "x-ms-lease-duration": duration, "x-ms-proposed-lease-id": id });
/** Lease headers of a release. */
export const release = (id: string) => lease("release", { "x-ms-lease-id": id });
/** Lease headers of a change from one id to another. */
export const change = (from: string, to: string) =>
  lease("change", { "x-ms-lease-id": from, "x-ms-proposed-lease-id": to });

/** A Lease File request (`PUT file?comp=lease`) and the answer expected. */
export function fileLease(
  headers: Record<string, string>,
  status: number,
  more: Partial<RequestStep> = {},
): RequestStep {
  return { req: "PUT file?comp=lease", headers, status, ...more };
}

/** A Lease Share request (`PUT share?restype=share&comp=lease`) and the answer expected. */
export function shareLease(
  headers: Record<string, string>,
  status: number,
  more: Partial<RequestStep> = {},
): RequestStep {
  return { req: "PUT share?restype=share&comp=lease", headers, status, ...more };
}

/** Create File as the SDK (12.13, recorded) sends it without options. */
export function createFile(length: number): Record<string, string> {
  return {
    "x-ms-type": "file",
    "x-ms-content-length": String(length),
    "x-ms-file-attributes": "None",
    "x-ms-file-creation-time": "now",
    "x-ms-file-last-write-time": "now",
    "x-ms-file-permission": "inherit",
  };
}

/** Set File Properties as the SDK (12.13, recorded) sends it: every SMB property preserved. */
export const PRESERVE = {
  "x-ms-file-attributes": "preserve",
  "x-ms-file-creation-time": "preserve",
  "x-ms-file-last-write-time": "preserve",
  "x-ms-file-permission": "preserve",
};

/** Lease headers of Get File (Properties) and Get Share Properties, by state. */
export const LEASED = {
  "x-ms-lease-state": "leased",
  "x-ms-lease-status": "locked",
  "x-ms-lease-duration": "infinite",
};
export const BROKEN = { "x-ms-lease-state": "broken", "x-ms-lease-status": "unlocked", "x-ms-lease-duration": null };
export const AVAILABLE = {
  "x-ms-lease-state": "available",
  "x-ms-lease-status": "unlocked",
  "x-ms-lease-duration": null,
};

/**
 * The recorded `beforeEach` of the SDK's tests (every recording starts with it): a share, a
 * directory in it, an 11-byte file in that. The file's permission is inherited, not the
 * directory's own key.
 */
export const SETUP: Readonly<Record<Given, readonly RequestStep[]>> = (() => {
  const share: RequestStep = { req: "PUT share?restype=share", status: 201 };
  const dir: RequestStep = {
    req: "PUT dir?restype=directory",
    headers: {
      "x-ms-file-attributes": "Directory",
      "x-ms-file-creation-time": "now",
      "x-ms-file-last-write-time": "now",
      "x-ms-file-permission": "inherit",
    },
    status: 201,
    capture: { dirKey: "x-ms-file-permission-key" },
  };
  const file: RequestStep = {
    req: "PUT file",
    headers: createFile(11),
    status: 201,
    answers: { "x-ms-file-attributes": "Archive", "x-ms-file-permission-key": "!{dirKey}" },
    capture: { created: "x-ms-file-creation-time", fileKey: "x-ms-file-permission-key", fileId: "x-ms-file-id" },
  };
  return { share: [share], "share+dir": [share, dir], "share+dir+file": [share, dir, file] };
})();
