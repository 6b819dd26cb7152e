/**
 * `azure-storage-concurrency lock`: list lease locks, show one lock's holder, age, state and
 * fencing token, and break a stuck lock (only with --yes). Blob and container leases, and Azure
 * Files' file and share leases. An operator's tool that breaks leases: it says on its first line
 * which account and container it acts on, and shows the holder it is about to break.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { listLocks } from "azure-storage-concurrency/lease";
import { LeaseLock, type LockHolder } from "azure-storage-concurrency/lease";
import {
  mayBeSecret,
  numberFlag,
  shownArgument,
  stringFlag,
  UsageError,
  type FlagSpec,
  type Flags,
  didYouMean,
} from "../../internal/args.js";
import { serviceCodeOf, statusOf } from "azure-storage-concurrency/errors";
import type { Command, CommandContext } from "../command.js";
import { SignedInFailure } from "../explain.js";
import { age, holderText, listJson, listText, lockJson, lockText, printable } from "./lock-output.js";
import { chooseLockStorage, LOCK_STORAGE_FLAGS, timed, type LockStorage } from "./lock-storage.js";
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
  break   break the lease whoever holds it; it first prints the holder it is about to break.
          By default the break waits a little longer than the holder's renewal interval
          (recorded at acquisition; at most 60 s, and never longer than the lease has left), so
          a live holder notices and stops before the lock is free. --now breaks it at once;
          --break-period sets the wait. Needs --yes.
          File leases take no break period: they break at once. From then on the service refuses
          the holder's writes under the lease, and a fileLock holder stops at its next check.

Flags may come anywhere: \`lock break --yes locks nightly-report\` breaks the lock
'nightly-report' in container 'locks'. Holder names and hosts are printed escaped (\\u001b, \\n):
whoever takes a lock writes them.

Account (the first line on stderr says which one, and the container):
  AZURE_STORAGE_CONNECTION_STRING            by default
  --connection-string <cs>                   another connection string (visible in the process
                                             list: prefer the environment variable)
  --account-name <name>                      Microsoft Entra ID (DefaultAzureCredential: az login,
  --blob-endpoint <url>, --file-endpoint <url>  environment, managed identity); needs @azure/identity
                                             and a data role (Storage Blob Data Reader to list and
                                             show, Contributor to break)
  --azurite                                  an embedded emulator (blobs only: no Azure Files)
A call that gets no answer fails after 10 s; an unreachable endpoint fails at once.

Exit codes: 0 done, 1 failed, 2 usage, 3 --yes missing, 4 not found.`;

const flags: FlagSpec = {
  ...LOCK_STORAGE_FLAGS,
  json: { type: "boolean" },
  prefix: { type: "string" },
  file: { type: "string" },
  share: { type: "string" },
  yes: { type: "boolean" },
  now: { type: "boolean" },
  "break-period": { type: "string" },
};

/** The flags each action accepts, beyond the connection flags. */
const ACTION_FLAGS: Readonly<Record<string, readonly string[]>> = {
  list: ["json", "prefix"],
  show: ["json", "file", "share"],
  break: ["file", "share", "yes", "now", "break-period"],
};

export const lockCommand: Command = {
  name: "lock",
  summary: "list lease locks, show a lock's holder and token, break a stuck lock",
  help,
  flags,
  async run(context) {
    const [action, ...positional] = context.positional;
    if (!action || !(action in ACTION_FLAGS)) {
      throw new UsageError(
        `lock needs an action: list, show or break${action ? `, got ${shownArgument(action)}${didYouMean(action, Object.keys(ACTION_FLAGS))}` : ""} (see \`lock --help\`)`,
      );
    }
    for (const [name, value] of Object.entries(context.flags)) {
      if (value !== undefined && !(name in LOCK_STORAGE_FLAGS) && !ACTION_FLAGS[action]!.includes(name))
        throw new UsageError(`--${name} does not apply to lock ${action}`);
    }
    const target = parseLockTarget(action, positional, context.flags);
    if (action === "list" && target.kind === "blob")
      throw new UsageError(`unexpected argument ${shownArgument(target.blobName)}`);
    const breakPeriodInSeconds = action === "break" ? breakPeriodFlag(context.flags, target) : undefined;
    const open = chooseLockStorage(context.flags);
    if (action === "break" && !context.flags["yes"]) {
      context.progress(
        "Breaking a lock lets someone else take it while its holder may still be working. Add --yes to break it.",
      );
      return 3;
    }
    const storage = await open();
    try {
      const service = target.kind === "file" || target.kind === "share" ? "file" : "blob";
      context.progress(`${storage.describe(service)}; ${where(target)}`);
      if (action === "list") return await list(context, storage, (target as { containerName: string }).containerName);
      const leasable = await openLockTarget(target, storage);
      return await showOrBreak(context, action, storage, leasable, target, breakPeriodInSeconds);
    } catch (error) {
      // The advice on a refusal depends on how the command signed in (a role, a SAS right, the key).
      throw error instanceof UsageError ? error : new SignedInFailure(storage.signIn, error);
    } finally {
      await storage.close();
    }
  },
};

/** "container 'locks'", "share 'config'": where a target lives (a name that may be a secret by its length only). */
function where(target: LockTarget): string {
  return target.kind === "blob" || target.kind === "container"
    ? `container ${named(target.containerName)}`
    : `share ${named(target.shareName)}`;
}

/** A name the operator typed, quoted and printable; one that may be a secret (a pasted key) by its length only. */
function named(name: string): string {
  return mayBeSecret(name) ? shownArgument(name) : `'${printable(name)}'`;
}

/** What the command looked for, in the words the operator typed it (for "does not exist"). */
function typed(target: LockTarget): string {
  switch (target.kind) {
    case "blob":
      return `blob ${named(target.blobName)} in ${where(target)}`;
    case "file":
      return `file ${named([target.directory, target.fileName].filter(Boolean).join("/"))} in ${where(target)}`;
    default:
      return where(target);
  }
}

async function showOrBreak(
  context: CommandContext,
  action: string,
  storage: LockStorage,
  leasable: Awaited<ReturnType<typeof openLockTarget>>,
  target: LockTarget,
  breakPeriodInSeconds: number | undefined,
): Promise<number> {
  const lock = new LeaseLock(leasable, { createIfMissing: false });
  const service = target.kind === "file" || target.kind === "share" ? "file" : "blob";
  const info = await timed(storage, service, (abortSignal) => lock.inspect({ abortSignal }));
  const description = printable(info.description);
  if (!info.exists) {
    context.progress(`${typed(target)} does not exist`);
    return 4;
  }
  if (action === "show") {
    context.out(context.flags["json"] ? lockJson(info) : lockText(info));
    return 0;
  }
  if (!info.held) {
    context.out(`${description} is not held (state ${info.state}); nothing to break`);
    return 0;
  }
  const holder = info.holder
    ? `held by ${holderText(info.holder)}, acquired ${age(info.holder.acquiredAt)} ago, fencing token ${info.fencingToken}`
    : "held by a holder that recorded nothing (not a LeaseLock)";
  context.progress(`breaking the lease on ${description}, ${holder}`);
  const period = breakPeriodInSeconds ?? safeBreakPeriod(info.holder);
  const seconds = await timed(storage, service, (abortSignal) =>
    lock.break({ breakPeriodInSeconds: period, abortSignal }),
  );
  // The holder was named on stderr before the break; the result line does not repeat it.
  context.out(
    target.kind === "file"
      ? `broke the lease on ${description}; it is free now. The service refuses the holder's writes under the lease ` +
          `from now on${info.holder?.renewIntervalInMs === undefined ? "" : `, and it stops at its next check (every ${info.holder.renewIntervalInMs} ms)`}`
      : seconds === 0
        ? `broke the lease on ${description}; it is free now`
        : `breaking the lease on ${description}: free in ${seconds} s (its holder stops at its next renewal)`,
  );
  return 0;
}

export function breakPeriodFlag(flags: Flags, target: Pick<LockTarget, "kind">): number | undefined {
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
export function safeBreakPeriod(holder: LockHolder | undefined): number {
  const renewIntervalInMs = holder?.renewIntervalInMs;
  if (renewIntervalInMs === undefined) return 60;
  return Math.min(60, Math.ceil(renewIntervalInMs / 1000) + 1);
}

async function list(context: CommandContext, storage: LockStorage, containerName: string): Promise<number> {
  const container: ContainerClient = (await storage.blobService()).getContainerClient(containerName);
  const prefix = stringFlag(context.flags, "prefix");
  // One page per call, each with its own time limit: a large container may take many pages. No
  // existence check first: Get Container Properties needs more than listing does (a container SAS
  // with read and list rights may list, not read the container's properties); a missing container
  // answers the listing with 404 ContainerNotFound.
  let rows: Awaited<ReturnType<typeof listLocks>>;
  try {
    rows = await listLocks(container, prefix, (call) => timed(storage, "blob", call));
  } catch (error) {
    if (statusOf(error) !== 404 || serviceCodeOf(error) !== "ContainerNotFound") throw error;
    context.progress(`container ${named(containerName)} does not exist`);
    return 4;
  }
  if (context.flags["json"]) context.out(listJson(rows));
  else if (rows.length === 0) context.out(`no locks in container ${named(containerName)}`);
  else context.out(listText(rows));
  return 0;
}
