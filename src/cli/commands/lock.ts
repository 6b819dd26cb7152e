/**
 * `azure-storage-concurrency lock`: list lease locks, show one lock's holder, age, state and
 * fencing token, and break a stuck lock (only with --yes). Blob and container leases, and Azure
 * Files' file and share leases.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { readLockRecord, type LockHolder } from "../../lease/holder.js";
import { describeHolder, LeaseLock, type LockInfo } from "../../lease/lock.js";
import { numberFlag, stringFlag, UsageError, type Flags } from "../args.js";
import type { Command, CommandContext } from "../command.js";
import { openConnection } from "../connection.js";
import { importSdk } from "../sdk.js";
import { openLockTarget, parseLockTarget, type LockTarget } from "./lock-target.js";

const help = `Usage:
  azure-storage-concurrency lock list <container> [--prefix <p>] [--json]
  azure-storage-concurrency lock show <container> [<blob>] [--json]
  azure-storage-concurrency lock show --file <share>/<path> | --share <share> [--json]
  azure-storage-concurrency lock break <container> [<blob>] --yes [--break-period <seconds> | --now]
  azure-storage-concurrency lock break --file <share>/<path> --yes
  azure-storage-concurrency lock break --share <share> --yes [--break-period <seconds> | --now]

Lease locks are blob leases (or, without <blob>, the container's own lease), Azure Files file
leases (--file) or share leases (--share) taken by this library's LeaseLock (blobLock, fileLock,
shareLock); each acquisition records its holder and fencing token in the metadata.

  list    every blob in <container> that is leased or carries a lock record
  show    one lock: state, holder (host, pid, name), age, fencing token, lease timings
  break   break the lease whoever holds it. By default the break waits a little longer than the
          holder's renewal interval (recorded at acquisition; at most 60 s, and never longer than
          the lease has left), so a live holder notices and stops before the lock is free.
          --now breaks it at once; --break-period sets the wait. Needs --yes.
          File leases take no break period: they break at once. From then on the service refuses
          the holder's writes under the lease, and a fileLock holder stops at its next check.

Exit codes: 0 done, 1 failed, 2 usage, 3 --yes missing, 4 not found.
Connection: --connection-string <cs>, AZURE_STORAGE_CONNECTION_STRING, or --azurite (blobs only:
Azurite does not emulate Azure Files).`;

export const lockCommand: Command = {
  name: "lock",
  summary: "list lease locks, show a lock's holder and token, break a stuck lock",
  help,
  async run(context) {
    const [action, ...positional] = context.positional;
    if (!action || !["list", "show", "break"].includes(action)) {
      throw new UsageError("lock needs an action: list, show or break (see `lock --help`)");
    }
    const target = parseLockTarget(action, positional, context.flags);
    if (action === "list" && target.kind === "blob") throw new UsageError(`unexpected argument "${target.blobName}"`);
    if (action === "break" && !context.flags["yes"]) {
      context.progress(
        "Breaking a lock lets someone else take it while its holder may still be working. Add --yes to break it.",
      );
      return 3;
    }
    const breakPeriodInSeconds = action === "break" ? breakPeriodFlag(context.flags, target) : undefined;
    const connection = await openConnection(context.flags);
    try {
      if (action === "list") {
        const { BlobServiceClient } = await importSdk(() => import("@azure/storage-blob"), "@azure/storage-blob");
        const containerName = (target as Extract<LockTarget, { kind: "container" }>).containerName;
        return await list(
          context,
          BlobServiceClient.fromConnectionString(connection.connectionString).getContainerClient(containerName),
        );
      }
      const lock = new LeaseLock(await openLockTarget(target, connection.connectionString), { createIfMissing: false });
      const info = await lock.inspect();
      if (!info.exists) {
        context.progress(`${info.description} does not exist`);
        return 4;
      }
      if (action === "show") {
        context.out(context.flags["json"] ? JSON.stringify(toJson(info)) : describe(info));
        return 0;
      }
      if (!info.held) {
        context.out(`${info.description} is not held (state ${info.state}); nothing to break`);
        return 0;
      }
      const period = breakPeriodInSeconds ?? safeBreakPeriod(info.holder);
      const seconds = await lock.break({ breakPeriodInSeconds: period });
      context.out(
        target.kind === "file"
          ? `broke the lease on ${info.description}; it is free now. The service refuses the holder's writes under the lease ` +
              `from now on${info.holder?.renewIntervalInMs === undefined ? "" : `, and it stops at its next check (every ${info.holder.renewIntervalInMs} ms)`}`
          : seconds === 0
            ? `broke the lease on ${info.description}; it is free now`
            : `breaking the lease on ${info.description}: free in ${seconds} s (its holder stops at its next renewal)`,
      );
      return 0;
    } finally {
      await connection.close();
    }
  },
};

function breakPeriodFlag(flags: Flags, target: LockTarget): number | undefined {
  if (target.kind === "file") {
    // Lease File takes no break period: a file lease always breaks at once.
    if (flags["break-period"] !== undefined && Number(flags["break-period"]) !== 0) {
      throw new UsageError(
        "--break-period does not apply to --file: file leases take no break period and break at once",
      );
    }
    return 0;
  }
  if (flags["now"]) {
    if (flags["break-period"] !== undefined) throw new UsageError("use --now or --break-period, not both");
    return 0;
  }
  if (flags["break-period"] === undefined) return undefined;
  const seconds = numberFlag(flags, "break-period", 0, 0);
  if (!Number.isInteger(seconds) || seconds > 60)
    throw new UsageError("--break-period must be a whole number of seconds from 0 to 60");
  return seconds;
}

/** A little longer than the holder's renewal (or check) interval, so a live holder notices first. */
function safeBreakPeriod(holder: LockHolder | undefined): number {
  const renewIntervalInMs = holder?.renewIntervalInMs;
  if (renewIntervalInMs === undefined) return 60;
  return Math.min(60, Math.ceil(renewIntervalInMs / 1000) + 1);
}

/** One line of `lock list` (and one object of its `--json` output). */
interface LockRow {
  readonly name: string;
  readonly state: string;
  readonly held: boolean;
  readonly holder: string | undefined;
  /** ISO 8601, as the holder's clock recorded it. */
  readonly acquiredAt: string | undefined;
  readonly fencingToken: number;
}

async function list(context: CommandContext, container: ContainerClient): Promise<number> {
  if (!(await container.exists())) {
    context.progress(`container '${container.containerName}' does not exist`);
    return 4;
  }
  const prefix = stringFlag(context.flags, "prefix");
  const rows: LockRow[] = [];
  for await (const blob of container.listBlobsFlat({ includeMetadata: true, ...(prefix ? { prefix } : {}) })) {
    const record = readLockRecord(blob.metadata ?? {});
    const state = blob.properties.leaseState ?? "available";
    if (state === "available" && record.holder === undefined) continue;
    rows.push({
      name: blob.name,
      state,
      held: state === "leased" || state === "breaking",
      holder: record.holder ? describeHolder(record.holder) : undefined,
      acquiredAt: record.holder?.acquiredAt?.toISOString(),
      fencingToken: record.fencingToken,
    });
  }
  if (context.flags["json"]) {
    context.out(JSON.stringify(rows));
    return 0;
  }
  if (rows.length === 0) {
    context.out(`no locks in container '${container.containerName}'`);
    return 0;
  }
  const table = [
    ["NAME", "STATE", "TOKEN", "AGE", "HOLDER (last, when not held)"],
    ...rows.map((r) => [
      r.name,
      r.state,
      String(r.fencingToken),
      age(r.acquiredAt === undefined ? undefined : new Date(r.acquiredAt)),
      r.holder ?? "-",
    ]),
  ];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table)
    context.out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
  return 0;
}

function age(acquiredAt: Date | undefined): string {
  if (!acquiredAt) return "-";
  const seconds = Math.max(0, Math.round((Date.now() - acquiredAt.getTime()) / 1000));
  return seconds < 120
    ? `${seconds}s`
    : seconds < 7200
      ? `${Math.round(seconds / 60)}m`
      : `${Math.round(seconds / 3600)}h`;
}

function toJson(info: LockInfo) {
  return {
    ...info,
    holder: info.holder && {
      ...info.holder,
      acquiredAt: info.holder.acquiredAt?.toISOString(),
      durationInSeconds: info.holder.durationInSeconds === Infinity ? "infinite" : info.holder.durationInSeconds,
    },
    ageInSeconds: info.holder?.acquiredAt
      ? Math.round((Date.now() - info.holder.acquiredAt.getTime()) / 1000)
      : undefined,
  };
}

function describe(info: LockInfo): string {
  const holder = info.holder;
  return [
    `lock:          ${info.description}`,
    `state:         ${info.state}${info.durationType ? ` (${info.durationType} lease)` : ""}`,
    `fencing token: ${info.fencingToken}`,
    `${info.held ? "holder:       " : "last holder:  "} ${holder ? describeHolder(holder) : "-"}`,
    `acquired:      ${holder?.acquiredAt ? `${holder.acquiredAt.toISOString()} (${age(holder.acquiredAt)} ago)` : "-"}`,
    `lease:         ${holder?.durationInSeconds === undefined ? "-" : holder.durationInSeconds === Infinity ? "infinite" : `${holder.durationInSeconds} s`}` +
      `${holder?.renewIntervalInMs === undefined ? "" : `, ${holder.durationInSeconds === Infinity ? "checked" : "renewed"} every ${holder.renewIntervalInMs} ms`}`,
  ].join("\n");
}
