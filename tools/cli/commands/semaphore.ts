/**
 * `azure-storage-concurrency semaphore`: list the blob-lease semaphores of a container, show one
 * semaphore's slots (state, holder, age, fencing token), and break stuck permits (only with --yes).
 * A semaphore's permits are lease locks on its slot blobs (`<name>/slot-<n>`), so this is the
 * `lock` command's safety on each slot: the account and container named on the first line, the
 * holders printed (escaped) before a break, the same break period and exit codes.
 */
import type { ContainerClient } from "@azure/storage-blob";
import { blobLeasable, LeaseLock, listLocks } from "azure-storage-concurrency/lease";
import { listSlots, slotBlobName, type SlotRow } from "azure-storage-concurrency/semaphore";
import { mayBeSecret, shownArgument, stringFlag, UsageError, type FlagSpec, didYouMean } from "../../internal/args.js";
import { serviceCodeOf, statusOf } from "azure-storage-concurrency/errors";
import type { Command, CommandContext } from "../command.js";
import { SignedInFailure } from "../explain.js";
import { breakPeriodFlag, safeBreakPeriod } from "./lock.js";
import { age, columns, holderJson, holderText, printable, printableJson } from "./lock-output.js";
import { chooseLockStorage, LOCK_STORAGE_FLAGS, timed, type LockStorage } from "./lock-storage.js";

const help = `Usage:
  azure-storage-concurrency semaphore list <container> [--prefix <p>] [--json]
  azure-storage-concurrency semaphore show <container> <name> [--json]
  azure-storage-concurrency semaphore break <container> <name> --slot <n> --yes [--break-period <seconds> | --now]
  azure-storage-concurrency semaphore break <container> <name> --all --yes [--break-period <seconds> | --now]

A semaphore made by this library's blobSemaphore(container, name, { maxCount }) is the slot blobs
<name>/slot-0 ... <name>/slot-<maxCount - 1>; a permit is a lease on one of them, with its holder
and fencing token recorded in the slot's metadata (as a lock's).

  list    every semaphore in <container>: its slots, how many are held
  show    one semaphore's slots: state, holder (host, pid, name), age, fencing token
  break   break the lease of one slot (--slot) or of every held slot (--all), whoever holds it;
          it first prints each holder it is about to break. By default each break waits a little
          longer than that holder's renewal interval (at most 60 s), so that a live holder notices
          and stops before its permit is free. --now breaks at once; --break-period sets the wait.
          Needs --yes.

Flags may come anywhere. Holder names and hosts are printed escaped (\\u001b, \\n): whoever takes
a permit writes them.

Account (the first line on stderr says which one, and the container): as for \`lock\`:
  AZURE_STORAGE_CONNECTION_STRING by default, --connection-string <cs>, --account-name <name>
  (Microsoft Entra ID; --blob-endpoint <url>), or --azurite.
A call that gets no answer fails after 10 s; an unreachable endpoint fails at once.

Exit codes: 0 done, 1 failed, 2 usage, 3 --yes missing, 4 not found.`;

const flags: FlagSpec = {
  ...LOCK_STORAGE_FLAGS,
  json: { type: "boolean" },
  prefix: { type: "string" },
  slot: { type: "string" },
  all: { type: "boolean" },
  yes: { type: "boolean" },
  now: { type: "boolean" },
  "break-period": { type: "string" },
};

/** The flags each action accepts, beyond the connection flags. */
const ACTION_FLAGS: Readonly<Record<string, readonly string[]>> = {
  list: ["json", "prefix"],
  show: ["json"],
  break: ["slot", "all", "yes", "now", "break-period"],
};

export const semaphoreCommand: Command = {
  name: "semaphore",
  summary: "list blob-lease semaphores, show their slots' holders and tokens, break stuck permits",
  help,
  flags,
  async run(context) {
    const [action, containerName, name, ...extra] = context.positional;
    if (!action || !(action in ACTION_FLAGS)) {
      throw new UsageError(
        `semaphore needs an action: list, show or break${action ? `, got ${shownArgument(action)}${didYouMean(action, Object.keys(ACTION_FLAGS))}` : ""} (see \`semaphore --help\`)`,
      );
    }
    for (const [flag, value] of Object.entries(context.flags)) {
      if (value !== undefined && !(flag in LOCK_STORAGE_FLAGS) && !ACTION_FLAGS[action]!.includes(flag))
        throw new UsageError(`--${flag} does not apply to semaphore ${action}`);
    }
    if (!containerName) throw new UsageError(`semaphore ${action} needs a container name`);
    const stray = action === "list" ? name : extra[0];
    if (stray !== undefined) throw new UsageError(`unexpected argument ${shownArgument(stray)}`);
    if (action !== "list" && !name) throw new UsageError(`semaphore ${action} needs the semaphore's name`);
    const slot = action === "break" ? slotFlag(context) : undefined;
    const breakPeriodInSeconds = action === "break" ? breakPeriodFlag(context.flags, { kind: "blob" }) : undefined;
    const open = chooseLockStorage(context.flags);
    if (action === "break" && !context.flags["yes"]) {
      context.progress(
        "Breaking a permit lets someone else take it while its holder may still be working. Add --yes to break it.",
      );
      return 3;
    }
    const storage = await open();
    try {
      context.progress(`${storage.describe("blob")}; container ${named(containerName)}`);
      const container = (await storage.blobService()).getContainerClient(containerName);
      if (action === "list") return await list(context, storage, container);
      const slots = await readSlots(context, storage, container, name!);
      if (slots === undefined) return 4;
      if (action === "show") {
        context.out(context.flags["json"] ? showJson(container, name!, slots) : showText(container, name!, slots));
        return 0;
      }
      return await breakSlots(context, storage, container, name!, slots, slot, breakPeriodInSeconds);
    } catch (error) {
      throw error instanceof UsageError ? error : new SignedInFailure(storage.signIn, error);
    } finally {
      await storage.close();
    }
  },
};

/** A name the operator typed, quoted and printable; one that may be a secret (a pasted key) by its length only. */
function named(name: string): string {
  return mayBeSecret(name) ? shownArgument(name) : `'${printable(name)}'`;
}

/** `--slot <n>` (a slot number) or `--all` (`"all"`): exactly one of them. */
function slotFlag(context: CommandContext): number | "all" {
  const slot = stringFlag(context.flags, "slot");
  if (context.flags["all"] === true) {
    if (slot !== undefined) throw new UsageError("use --slot <n> or --all, not both");
    return "all";
  }
  if (slot === undefined)
    throw new UsageError("semaphore break needs --slot <n> (one slot) or --all (every held slot)");
  if (!/^(0|[1-9]\d{0,5})$/.test(slot)) throw new UsageError(`--slot takes a slot number, got ${shownArgument(slot)}`);
  return Number(slot);
}

/** The semaphore's slots; `undefined` (after saying so) when the container or the semaphore does not exist. */
async function readSlots(
  context: CommandContext,
  storage: LockStorage,
  container: ContainerClient,
  name: string,
): Promise<SlotRow[] | undefined> {
  try {
    const slots = await listSlots(container, name, (call) => timed(storage, "blob", call));
    if (slots.length > 0) return slots;
    context.progress(`semaphore ${named(name)} has no slots in container ${named(container.containerName)}`);
  } catch (error) {
    if (statusOf(error) !== 404 || serviceCodeOf(error) !== "ContainerNotFound") throw error;
    context.progress(`container ${named(container.containerName)} does not exist`);
  }
  return undefined;
}

async function list(context: CommandContext, storage: LockStorage, container: ContainerClient): Promise<number> {
  const prefix = stringFlag(context.flags, "prefix");
  let rows: Awaited<ReturnType<typeof listLocks>>;
  try {
    rows = await listLocks(container, prefix, (call) => timed(storage, "blob", call));
  } catch (error) {
    if (statusOf(error) !== 404 || serviceCodeOf(error) !== "ContainerNotFound") throw error;
    context.progress(`container ${named(container.containerName)} does not exist`);
    return 4;
  }
  const semaphores = new Map<string, { slots: number; held: number[] }>();
  for (const row of rows) {
    const match = /^(.+)\/slot-(0|[1-9]\d{0,5})$/.exec(row.name);
    if (!match) continue;
    const entry = semaphores.get(match[1]!) ?? { slots: 0, held: [] };
    entry.slots += 1;
    if (row.held) entry.held.push(Number(match[2]));
    semaphores.set(match[1]!, entry);
  }
  const found = [...semaphores].map(([name, { slots, held }]) => ({
    name,
    slots,
    held: held.length,
    heldSlots: held.sort((a, b) => a - b),
  }));
  if (context.flags["json"]) context.out(printableJson(found));
  else if (found.length === 0) context.out(`no semaphores in container ${named(container.containerName)}`);
  else
    context.out(
      columns([
        ["NAME", "SLOTS", "HELD", "HELD SLOTS"],
        ...found.map((s) => [printable(s.name), String(s.slots), String(s.held), s.heldSlots.join(",") || "-"]),
      ]),
    );
  return 0;
}

function showJson(container: ContainerClient, name: string, slots: readonly SlotRow[]): string {
  return printableJson({
    container: container.containerName,
    name,
    held: slots.filter((s) => s.held).length,
    slots: slots.map((s) => ({ ...s, holder: holderJson(s.holder) })),
  });
}

function showText(container: ContainerClient, name: string, slots: readonly SlotRow[]): string {
  const held = slots.filter((s) => s.held).length;
  return [
    `semaphore:  '${printable(`${container.containerName}/${name}`)}', ${slots.length} slot${slots.length === 1 ? "" : "s"}, ${held} held`,
    columns([
      ["SLOT", "STATE", "TOKEN", "AGE", "HOLDER (last, when not held)"],
      ...slots.map((s) => [
        String(s.slot),
        s.state,
        String(s.fencingToken),
        age(s.holder?.acquiredAt),
        s.holder ? holderText(s.holder) : "-",
      ]),
    ]),
  ].join("\n");
}

async function breakSlots(
  context: CommandContext,
  storage: LockStorage,
  container: ContainerClient,
  name: string,
  slots: readonly SlotRow[],
  which: number | "all" | undefined,
  breakPeriodInSeconds: number | undefined,
): Promise<number> {
  const targets = which === "all" ? slots.filter((s) => s.held) : slots.filter((s) => s.slot === which);
  if (which !== "all" && targets.length === 0) {
    context.progress(`semaphore ${named(name)} has no slot ${which}`);
    return 4;
  }
  if (targets.every((s) => !s.held)) {
    context.out(
      `no permit of semaphore '${printable(name)}' is held${which === "all" ? "" : ` on slot ${which}`}; nothing to break`,
    );
    return 0;
  }
  for (const slot of targets) {
    // Read again just before: the listing is a moment old, and the break must name who it breaks.
    const lock = new LeaseLock(blobLeasable(container, slotBlobName(name, slot.slot)), { createIfMissing: false });
    const info = await timed(storage, "blob", (abortSignal) => lock.inspect({ abortSignal }));
    if (!info.held) {
      context.out(`slot ${slot.slot} is no longer held (state ${info.state}); nothing to break`);
      continue;
    }
    const holder = info.holder
      ? `held by ${holderText(info.holder)}, acquired ${age(info.holder.acquiredAt)} ago, fencing token ${info.fencingToken}`
      : "held by a holder that recorded nothing";
    context.progress(`breaking the permit on slot ${slot.slot} of semaphore '${printable(name)}', ${holder}`);
    const period = breakPeriodInSeconds ?? safeBreakPeriod(info.holder);
    const seconds = await timed(storage, "blob", (abortSignal) =>
      lock.break({ breakPeriodInSeconds: period, abortSignal }),
    );
    context.out(
      seconds === 0
        ? `broke the permit on slot ${slot.slot} (${holder}); it is free now`
        : `breaking the permit on slot ${slot.slot} (${holder}): free in ${seconds} s (its holder stops at its next renewal)`,
    );
  }
  return 0;
}
