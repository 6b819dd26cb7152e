/**
 * The Files responder's lease state machines, as pure functions: every row of the outcome tables the
 * responder claims to follow (Lease File, Lease Share, and Lease Container for the shared states).
 */
import {
  applyLeaseAction,
  AVAILABLE,
  checkRead,
  checkWrite,
  leaseAt,
  leaseHeaders,
  type LeaseRecord,
  type LeaseRequest,
  type LeaseTarget,
} from "../../../src/testing/files-responder/leases.js";

const A = "aaaaaaaa-0000-4000-8000-000000000000";
const B = "bbbbbbbb-0000-4000-8000-000000000000";
const T0 = 1_000_000;

function act(target: LeaseTarget, lease: LeaseRecord, request: Partial<LeaseRequest>, now = T0) {
  return applyLeaseAction(
    target,
    lease,
    {
      action: undefined,
      leaseId: undefined,
      proposedLeaseId: undefined,
      duration: undefined,
      breakPeriod: undefined,
      ...request,
    },
    now,
    () => "generated-id",
  );
}
const ok = (outcome: ReturnType<typeof act>) => {
  if (!outcome.ok) throw new Error(`refused: ${outcome.status} ${outcome.code}`);
  return outcome;
};
const refusal = (outcome: ReturnType<typeof act>) => (outcome.ok ? "granted" : `${outcome.status} ${outcome.code}`);

const leasedFile: LeaseRecord = { state: "leased", leaseId: A, durationInSeconds: -1 };
const leasedShare = (seconds: number): LeaseRecord => ({
  state: "leased",
  leaseId: A,
  durationInSeconds: seconds,
  expiresAt: T0 + seconds * 1000,
});

describe("file leases (infinite only)", () => {
  it("acquire: -1 only; a proposed id or a generated one; same id again granted, another id 409", () => {
    expect(refusal(act("file", AVAILABLE, { action: "acquire", duration: "20" }))).toBe("400 InvalidHeaderValue");
    expect(refusal(act("file", AVAILABLE, { action: "acquire" }))).toBe("400 InvalidHeaderValue");
    expect(ok(act("file", AVAILABLE, { action: "acquire", duration: "-1", proposedLeaseId: A })).lease).toEqual(
      leasedFile,
    );
    expect(ok(act("file", AVAILABLE, { action: "acquire", duration: "-1" })).headers).toEqual({
      "x-ms-lease-id": "generated-id",
    });
    expect(ok(act("file", leasedFile, { action: "acquire", duration: "-1", proposedLeaseId: A })).status).toBe(201);
    expect(refusal(act("file", leasedFile, { action: "acquire", duration: "-1", proposedLeaseId: B }))).toBe(
      "409 LeaseAlreadyPresent",
    );
  });

  it("break: at once (lease time 0), also when broken; 409 when nothing is leased; no break period for files", () => {
    const broken = ok(act("file", leasedFile, { action: "break" }));
    expect([broken.status, broken.lease.state, broken.headers]).toEqual([202, "broken", { "x-ms-lease-time": "0" }]);
    expect(ok(act("file", broken.lease, { action: "break" })).lease.state).toBe("broken");
    expect(refusal(act("file", AVAILABLE, { action: "break" }))).toBe("409 LeaseNotPresentWithLeaseOperation");
    expect(refusal(act("file", leasedFile, { action: "break", breakPeriod: "5" }))).toBe("400 InvalidHeaderValue");
  });

  it("a broken lease can be released with its id or taken by anyone", () => {
    const broken = ok(act("file", leasedFile, { action: "break" })).lease;
    expect(ok(act("file", broken, { action: "release", leaseId: A })).lease).toBe(AVAILABLE);
    expect(ok(act("file", broken, { action: "acquire", duration: "-1", proposedLeaseId: B })).lease.leaseId).toBe(B);
    expect(refusal(act("file", broken, { action: "change", leaseId: A, proposedLeaseId: B }))).toBe(
      "409 LeaseNotPresentWithLeaseOperation",
    );
  });

  it("change and release need the current id; change to the id it already has is granted (a retried change)", () => {
    expect(ok(act("file", leasedFile, { action: "change", leaseId: A, proposedLeaseId: B })).lease.leaseId).toBe(B);
    expect(ok(act("file", leasedFile, { action: "change", leaseId: B, proposedLeaseId: A })).lease.leaseId).toBe(A);
    expect(refusal(act("file", leasedFile, { action: "change", leaseId: B, proposedLeaseId: "c" }))).toBe(
      "409 LeaseIdMismatchWithLeaseOperation",
    );
    expect(refusal(act("file", leasedFile, { action: "change", leaseId: A }))).toBe("400 MissingRequiredHeader");
    expect(refusal(act("file", leasedFile, { action: "release", leaseId: B }))).toBe(
      "409 LeaseIdMismatchWithLeaseOperation",
    );
    expect(refusal(act("file", AVAILABLE, { action: "release", leaseId: A }))).toBe(
      "409 LeaseNotPresentWithLeaseOperation",
    );
    expect(refusal(act("file", leasedFile, { action: "release" }))).toBe("400 MissingRequiredHeader");
    expect(refusal(act("file", leasedFile, { action: "renew", leaseId: A }))).toBe("400 InvalidHeaderValue");
  });

  it("writes: leased needs the id (LeaseIdMissing / Mismatch); an id on an unleased file is LeaseNotPresent; reads pass without an id", () => {
    const broken = ok(act("file", leasedFile, { action: "break" })).lease;
    expect(checkWrite("file", leasedFile, undefined, T0)?.code).toBe("LeaseIdMissing");
    expect(checkWrite("file", leasedFile, B, T0)?.code).toBe("LeaseIdMismatchWithFileOperation");
    expect(checkWrite("file", leasedFile, A, T0)).toBeUndefined();
    expect(checkWrite("file", broken, A, T0)?.code).toBe("LeaseNotPresentWithFileOperation");
    expect(checkWrite("file", broken, undefined, T0)).toBeUndefined();
    expect(checkRead("file", leasedFile, undefined, T0)).toBeUndefined();
    expect(checkRead("file", leasedFile, B, T0)?.code).toBe("LeaseIdMismatchWithFileOperation");
    expect(checkRead("file", AVAILABLE, A, T0)?.status).toBe(412);
  });

  it("headers: leased/locked/infinite, broken/unlocked without a duration", () => {
    expect(leaseHeaders(leasedFile, T0)).toEqual({
      "x-ms-lease-state": "leased",
      "x-ms-lease-status": "locked",
      "x-ms-lease-duration": "infinite",
    });
    expect(leaseHeaders({ state: "broken", leaseId: A }, T0)).toEqual({
      "x-ms-lease-state": "broken",
      "x-ms-lease-status": "unlocked",
    });
  });
});

describe("share leases (15-60 s or infinite)", () => {
  it("durations 15 to 60 or -1", () => {
    for (const bad of ["14", "61", "0", "1.5", "x"])
      expect(refusal(act("share", AVAILABLE, { action: "acquire", duration: bad }))).toBe("400 InvalidHeaderValue");
    for (const good of ["15", "60", "-1"])
      expect(ok(act("share", AVAILABLE, { action: "acquire", duration: good })).status).toBe(201);
  });

  it("expires after its duration; an expired lease may be renewed by its holder or taken by anyone", () => {
    const lease = leasedShare(15);
    expect(leaseAt(lease, T0 + 14_999).state).toBe("leased");
    expect(leaseAt(lease, T0 + 15_000).state).toBe("expired");
    expect(checkWrite("share", lease, undefined, T0 + 15_000)).toBeUndefined();
    const renewed = ok(act("share", lease, { action: "renew", leaseId: A }, T0 + 20_000)).lease;
    expect(renewed).toMatchObject({ state: "leased", expiresAt: T0 + 35_000 });
    expect(
      ok(act("share", lease, { action: "acquire", duration: "15", proposedLeaseId: B }, T0 + 20_000)).lease.leaseId,
    ).toBe(B);
  });

  it("break: a fixed lease breaks at the sooner of the period and its own end; breaking refuses acquire/change/renew", () => {
    const lease = leasedShare(60);
    const breaking = ok(act("share", lease, { action: "break", breakPeriod: "10" }));
    expect([breaking.lease.state, breaking.headers["x-ms-lease-time"]]).toEqual(["breaking", "10"]);
    expect(
      ok(act("share", leasedShare(15), { action: "break", breakPeriod: "60" }, T0 + 5_000)).headers["x-ms-lease-time"],
    ).toBe("10");
    expect(ok(act("share", lease, { action: "break" })).headers["x-ms-lease-time"]).toBe("60");
    expect(ok(act("share", lease, { action: "break", breakPeriod: "0" })).lease.state).toBe("broken");
    expect(refusal(act("share", breaking.lease, { action: "acquire", duration: "15", proposedLeaseId: A }))).toBe(
      "409 LeaseIsBreakingAndCannotBeAcquired",
    );
    expect(refusal(act("share", breaking.lease, { action: "acquire", duration: "15", proposedLeaseId: B }))).toBe(
      "409 LeaseAlreadyPresent",
    );
    expect(refusal(act("share", breaking.lease, { action: "change", leaseId: A, proposedLeaseId: B }))).toBe(
      "409 LeaseIsBreakingAndCannotBeChanged",
    );
    expect(refusal(act("share", breaking.lease, { action: "renew", leaseId: A }))).toBe(
      "409 LeaseIsBrokenAndCannotBeRenewed",
    );
    expect(checkWrite("share", breaking.lease, undefined, T0)?.code).toBe("LeaseIdMissing");
    expect(leaseAt(breaking.lease, T0 + 10_000).state).toBe("broken");
    expect(refusal(act("share", breaking.lease, { action: "break", breakPeriod: "61" }))).toBe(
      "400 InvalidHeaderValue",
    );
    // Lease Blob's outcome table (the share pages use its states): breaking an expired lease breaks it.
    const expired = ok(act("share", leasedShare(15), { action: "break" }, T0 + 15_000));
    expect([expired.status, expired.lease.state, expired.headers["x-ms-lease-time"]]).toEqual([202, "broken", "0"]);
  });

  it("the seconds a break answers are rounded down (recorded: 14 for a 15 s lease broken within its first second)", () => {
    expect(ok(act("share", leasedShare(15), { action: "break" }, T0 + 500)).headers["x-ms-lease-time"]).toBe("14");
  });

  it("an infinite share lease breaks at once, or after the period given", () => {
    const infinite: LeaseRecord = { state: "leased", leaseId: A, durationInSeconds: -1 };
    expect(ok(act("share", infinite, { action: "break" })).lease.state).toBe("broken");
    expect(ok(act("share", infinite, { action: "break", breakPeriod: "30" })).lease).toMatchObject({
      state: "breaking",
      breakEndsAt: T0 + 30_000,
    });
  });

  it("share writes use the container's codes, as the service was recorded answering", () => {
    expect(checkWrite("share", leasedShare(15), B, T0)?.code).toBe("LeaseIdMismatchWithContainerOperation");
    expect(checkWrite("share", AVAILABLE, A, T0)?.code).toBe("LeaseNotPresentWithContainerOperation");
    expect(leaseHeaders(leasedShare(15), T0)["x-ms-lease-duration"]).toBe("fixed");
  });

  it("an unknown action is refused", () => {
    expect(refusal(act("share", AVAILABLE, { action: "steal" }))).toBe("400 InvalidHeaderValue");
  });
});
