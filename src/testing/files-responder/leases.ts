/**
 * The lease state machines of the Files responder: file leases (infinite only) and share leases
 * (15-60 s or infinite), as pure functions of the lease, the request and the clock.
 *
 * Sources (REST reference):
 * - Lease File: https://learn.microsoft.com/rest/api/storageservices/lease-file
 *   ("acquire, change, release, break"; the only duration is -1, infinite).
 * - Lease Share: https://learn.microsoft.com/rest/api/storageservices/lease-share
 *   ("15 to 60 seconds, or infinite"; acquire, renew, change, release, break with a break period).
 * - The outcome table of Lease Container / Lease Blob
 *   (https://learn.microsoft.com/rest/api/storageservices/lease-container) for the states the share
 *   pages describe in the same words (expired, breaking, broken) and for the 409 codes.
 * - Recordings of the real service in Azure/azure-sdk-for-js
 *   (sdk/storage/storage-file-share/recordings/node/leaseclient/*.json): a second acquire with
 *   another id is 409 LeaseAlreadyPresent; change before acquire is 409
 *   LeaseNotPresentWithLeaseOperation; a file lease with duration 20 is 400 InvalidHeaderValue; a
 *   file break answers 202 with `x-ms-lease-time: 0` and leaves the file "broken"/"unlocked" with
 *   no `x-ms-lease-duration`; a write without the lease id is 412 LeaseIdMissing; a read with a wrong
 *   lease id is 412 LeaseIdMismatchWithFileOperation. For shares (`leaseclient_for_share/`): Set
 *   Share Metadata without the id is 412 LeaseIdMissing, with a wrong id (and Get Share Properties
 *   with a wrong id) 412 LeaseIdMismatchWithContainerOperation; release answers `x-ms-lease-time: 0`;
 *   a 15 s lease broken within a second answers 14. Each recorded answer is replayed against the
 *   responder by tests/integration/files/conformance.test.ts.
 */

/** What is leased: a file or a share. Their codes and rules differ slightly. */
export type LeaseTarget = "file" | "share";

/** The lease states the REST API reports in `x-ms-lease-state`. */
type LeaseStateName = "available" | "leased" | "expired" | "breaking" | "broken";

/** A lease as stored by the responder. Times are in milliseconds of the responder's clock. */
export interface LeaseRecord {
  readonly state: LeaseStateName;
  /** The lease id, while there is one (leased, expired, breaking, broken). */
  readonly leaseId?: string | undefined;
  /** -1 for infinite, else 15-60 (shares only). */
  readonly durationInSeconds?: number | undefined;
  /** When a fixed-duration lease expires. */
  readonly expiresAt?: number | undefined;
  /** When a breaking lease becomes broken. */
  readonly breakEndsAt?: number | undefined;
}

/** A lease action request, as read from the `x-ms-lease-*` headers. */
export interface LeaseRequest {
  readonly action: string | undefined;
  readonly leaseId: string | undefined;
  readonly proposedLeaseId: string | undefined;
  readonly duration: string | undefined;
  readonly breakPeriod: string | undefined;
}

/** A refusal: status, `x-ms-error-code` and message. */
interface ServiceRefusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

/** The outcome of a lease action. */
type LeaseActionOutcome =
  | {
      readonly ok: true;
      readonly lease: LeaseRecord;
      readonly status: number;
      readonly headers: Record<string, string>;
    }
  | ({ readonly ok: false } & ServiceRefusal);

export const AVAILABLE: LeaseRecord = Object.freeze({ state: "available" });

/** The lease as it is at `now`: fixed-duration leases expire and breaking leases become broken lazily. */
export function leaseAt(lease: LeaseRecord, now: number): LeaseRecord {
  if (lease.state === "leased" && lease.expiresAt !== undefined && now >= lease.expiresAt) {
    return { ...lease, state: "expired" };
  }
  if (lease.state === "breaking" && lease.breakEndsAt !== undefined && now >= lease.breakEndsAt) {
    return { state: "broken", leaseId: lease.leaseId, durationInSeconds: lease.durationInSeconds };
  }
  return lease;
}

/** Whether a stored lease is active at `now` (leased or breaking). */
export function isLeaseActive(stored: LeaseRecord, now: number): boolean {
  return isActive(leaseAt(stored, now));
}

/** Whether the lease currently guards writes (leased, or breaking: the holder keeps it until broken). */
function isActive(lease: LeaseRecord): boolean {
  return lease.state === "leased" || lease.state === "breaking";
}

/**
 * Applies `x-ms-lease-action` to a lease. `newLeaseId` supplies an id when acquire proposes none.
 */
export function applyLeaseAction(
  target: LeaseTarget,
  stored: LeaseRecord,
  request: LeaseRequest,
  now: number,
  newLeaseId: () => string,
): LeaseActionOutcome {
  const lease = leaseAt(stored, now);
  switch (request.action?.toLowerCase()) {
    case "acquire":
      return acquire(target, lease, request, now, newLeaseId);
    case "renew":
      return renew(target, lease, request, now);
    case "change":
      return change(target, lease, request);
    case "release":
      return release(target, lease, request);
    case "break":
      return breakLease(target, lease, request, now);
    default:
      return refuse(
        400,
        "InvalidHeaderValue",
        `The value of x-ms-lease-action is not valid for a ${target}: ${request.action ?? "(missing)"}.`,
      );
  }
}

function acquire(
  target: LeaseTarget,
  lease: LeaseRecord,
  request: LeaseRequest,
  now: number,
  newLeaseId: () => string,
): LeaseActionOutcome {
  const duration = parseDuration(target, request.duration);
  if (typeof duration !== "number") return duration;
  const proposed = request.proposedLeaseId ?? newLeaseId();
  if (lease.state === "breaking") {
    return proposed === lease.leaseId
      ? refuse(409, "LeaseIsBreakingAndCannotBeAcquired", "There is already a breaking lease present.")
      : refuse(409, "LeaseAlreadyPresent", "There is already a lease present.");
  }
  // Lease File: "If the file has an active lease, you can only request a new lease using the active lease ID."
  if (lease.state === "leased" && proposed !== lease.leaseId) {
    return refuse(409, "LeaseAlreadyPresent", "There is already a lease present.");
  }
  return granted(201, leased(proposed, duration, now), { "x-ms-lease-id": proposed });
}

function renew(target: LeaseTarget, lease: LeaseRecord, request: LeaseRequest, now: number): LeaseActionOutcome {
  // Lease File has no renew (infinite leases only); the SDK refuses it client-side too.
  if (target === "file")
    return refuse(400, "InvalidHeaderValue", "A file lease cannot be renewed: file leases are infinite.");
  if (!request.leaseId) return missingLeaseId();
  if (lease.state === "available") return notPresent(target);
  if (lease.leaseId !== request.leaseId) return mismatch(target);
  if (lease.state === "breaking" || lease.state === "broken") {
    return refuse(
      409,
      "LeaseIsBrokenAndCannotBeRenewed",
      "The lease ID matched, but the lease has been broken explicitly and cannot be renewed.",
    );
  }
  // Leased, or expired and not leased again since: the lease-share page says it "may be renewed even if it has expired".
  return granted(200, leased(request.leaseId, lease.durationInSeconds ?? -1, now), {
    "x-ms-lease-id": request.leaseId,
  });
}

function change(target: LeaseTarget, lease: LeaseRecord, request: LeaseRequest): LeaseActionOutcome {
  if (!request.leaseId) return missingLeaseId();
  if (!request.proposedLeaseId) {
    return refuse(
      400,
      "MissingRequiredHeader",
      "An HTTP header that's mandatory for this request is not specified: x-ms-proposed-lease-id.",
    );
  }
  if (lease.state === "breaking") {
    return refuse(
      409,
      "LeaseIsBreakingAndCannotBeChanged",
      "The lease ID matched, but the lease is currently in breaking state and cannot be changed.",
    );
  }
  if (lease.state !== "leased") return notPresent(target);
  // Changing to the id the lease already has succeeds (the change may be a retry of one that was applied).
  if (lease.leaseId !== request.leaseId && lease.leaseId !== request.proposedLeaseId) return mismatch(target);
  return granted(200, { ...lease, leaseId: request.proposedLeaseId }, { "x-ms-lease-id": request.proposedLeaseId });
}

function release(target: LeaseTarget, lease: LeaseRecord, request: LeaseRequest): LeaseActionOutcome {
  if (!request.leaseId) return missingLeaseId();
  if (lease.state === "available") return notPresent(target);
  if (lease.leaseId !== request.leaseId) return mismatch(target);
  // Recorded: a share's release answers `x-ms-lease-time: 0`, a file's none.
  return granted(200, AVAILABLE, target === "share" ? { "x-ms-lease-time": "0" } : {});
}

function breakLease(target: LeaseTarget, lease: LeaseRecord, request: LeaseRequest, now: number): LeaseActionOutcome {
  let period: number | undefined;
  if (request.breakPeriod !== undefined) {
    if (target === "file")
      return refuse(400, "InvalidHeaderValue", "x-ms-lease-break-period is not valid for a file lease.");
    period = Number(request.breakPeriod);
    if (!Number.isInteger(period) || period < 0 || period > 60) {
      return refuse(400, "InvalidHeaderValue", "x-ms-lease-break-period must be between 0 and 60.");
    }
  }
  if (lease.state === "available") return notPresent(target);
  // Lease Blob's outcome table (the share pages use its words): breaking a broken or an expired
  // lease leaves it broken, at once.
  if (lease.state === "broken" || lease.state === "expired") {
    return granted(
      202,
      { state: "broken", leaseId: lease.leaseId, durationInSeconds: lease.durationInSeconds },
      { "x-ms-lease-time": "0" },
    );
  }
  // Remaining time before the lease would end by itself (infinite leases: none, they break at once
  // unless a period is given).
  const remainingInMs =
    lease.state === "breaking"
      ? lease.breakEndsAt! - now
      : lease.expiresAt === undefined
        ? (period ?? 0) * 1000
        : lease.expiresAt - now;
  const breakInMs = Math.max(0, Math.min(remainingInMs, period === undefined ? remainingInMs : period * 1000));
  // Whole seconds left, rounded down: recorded, a 15 s share lease broken within a second of its
  // acquisition answers 14 (recordings/*/leaseclient_for_share/recording_break_a_broken_lease).
  const seconds = String(Math.floor(breakInMs / 1000));
  if (breakInMs === 0) {
    return granted(
      202,
      { state: "broken", leaseId: lease.leaseId, durationInSeconds: lease.durationInSeconds },
      { "x-ms-lease-time": "0" },
    );
  }
  return granted(202, { ...lease, state: "breaking", breakEndsAt: now + breakInMs }, { "x-ms-lease-time": seconds });
}

/**
 * Checks a write (or delete) against the lease: an active lease needs its id, a lease id needs an
 * active lease that it matches. Codes as recorded from the service: for files
 * `LeaseIdMismatchWithFileOperation`; for shares the container's names
 * (`LeaseIdMismatchWithContainerOperation`, recorded for Get Share Properties and Set Share
 * Metadata; `LeaseNotPresentWithContainerOperation` by the same family, not recorded).
 */
export function checkWrite(
  target: LeaseTarget,
  stored: LeaseRecord,
  suppliedLeaseId: string | undefined,
  now: number,
): ServiceRefusal | undefined {
  const lease = leaseAt(stored, now);
  if (isActive(lease)) {
    if (suppliedLeaseId === undefined) {
      return {
        status: 412,
        code: "LeaseIdMissing",
        message: `There is currently a lease on the ${target} and no lease ID was specified in the request.`,
      };
    }
    if (suppliedLeaseId !== lease.leaseId) return operationMismatch(target);
    return undefined;
  }
  return suppliedLeaseId === undefined ? undefined : operationNotPresent(target);
}

/** Checks a read that names a lease id: the id must match the active lease. Reads without one always pass. */
export function checkRead(
  target: LeaseTarget,
  stored: LeaseRecord,
  suppliedLeaseId: string | undefined,
  now: number,
): ServiceRefusal | undefined {
  if (suppliedLeaseId === undefined) return undefined;
  const lease = leaseAt(stored, now);
  if (!isActive(lease)) return operationNotPresent(target);
  return suppliedLeaseId === lease.leaseId ? undefined : operationMismatch(target);
}

/** The lease headers of Get File / Get File Properties / Get Share Properties. */
export function leaseHeaders(stored: LeaseRecord, now: number): Record<string, string> {
  const lease = leaseAt(stored, now);
  const headers: Record<string, string> = {
    "x-ms-lease-state": lease.state,
    "x-ms-lease-status": isActive(lease) ? "locked" : "unlocked",
  };
  if (lease.state === "leased") headers["x-ms-lease-duration"] = lease.durationInSeconds === -1 ? "infinite" : "fixed";
  return headers;
}

function parseDuration(target: LeaseTarget, raw: string | undefined): number | (ServiceRefusal & { ok: false }) {
  const value = Number(raw);
  const valid =
    target === "file" ? value === -1 : value === -1 || (Number.isInteger(value) && value >= 15 && value <= 60);
  if (raw === undefined || !valid) {
    const allowed = target === "file" ? "-1 (file leases are infinite)" : "-1 or 15 to 60";
    return refuse(
      400,
      "InvalidHeaderValue",
      `The value for one of the HTTP headers is not in the correct format: x-ms-lease-duration must be ${allowed}.`,
    );
  }
  return value;
}

function leased(leaseId: string, durationInSeconds: number, now: number): LeaseRecord {
  return {
    state: "leased",
    leaseId,
    durationInSeconds,
    expiresAt: durationInSeconds === -1 ? undefined : now + durationInSeconds * 1000,
  };
}

function granted(status: number, lease: LeaseRecord, headers: Record<string, string>): LeaseActionOutcome {
  return { ok: true, lease, status, headers };
}

function refuse(status: number, code: string, message: string): { ok: false } & ServiceRefusal {
  return { ok: false, status, code, message };
}

function missingLeaseId() {
  return refuse(
    400,
    "MissingRequiredHeader",
    "An HTTP header that's mandatory for this request is not specified: x-ms-lease-id.",
  );
}

function notPresent(target: LeaseTarget) {
  return refuse(409, "LeaseNotPresentWithLeaseOperation", `There is currently no lease on the ${target}.`);
}

function mismatch(target: LeaseTarget) {
  return refuse(
    409,
    "LeaseIdMismatchWithLeaseOperation",
    `The lease ID specified did not match the lease ID for the ${target}.`,
  );
}

function operationMismatch(target: LeaseTarget): ServiceRefusal {
  const code = target === "file" ? "LeaseIdMismatchWithFileOperation" : "LeaseIdMismatchWithContainerOperation";
  return {
    status: 412,
    code,
    message: `The lease ID specified did not match the lease ID for the ${target === "share" ? "file share" : "file"}.`,
  };
}

function operationNotPresent(target: LeaseTarget): ServiceRefusal {
  const code = target === "file" ? "LeaseNotPresentWithFileOperation" : "LeaseNotPresentWithContainerOperation";
  return { status: 412, code, message: `There is currently no lease on the ${target}.` };
}
