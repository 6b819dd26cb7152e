/**
 * CPU time of the benchmark process and of the embedded Azurite it started: on a small shared
 * machine, CPU per operation is steadier than operations per second, because other helpers' work
 * slows the wall clock but does not add to this process's or Azurite's CPU time (issue 27).
 */
import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time (user + system, ms) used so far by the embedded Azurite child of this process, read from
 * /proc on Linux; undefined elsewhere or against a real account. Azurite serves every
 * request on one event loop, so its CPU per operation is what bounds throughput on a small machine.
 */
export function azuriteCpuMs(): number | undefined {
  try {
    if (azuritePid !== undefined) {
      const known = cpuOfChild(azuritePid);
      if (known !== undefined) return known;
    }
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const cpu = cpuOfChild(entry);
      if (cpu === undefined) continue;
      if (!readFileSync(`/proc/${entry}/cmdline`, "utf8").includes("azurite")) continue;
      azuritePid = entry;
      return cpu;
    }
  } catch {
    // not Linux
  }
  return undefined;
}

/** The Azurite child found last (looked up again when it is gone). */
let azuritePid: string | undefined;

/**
 * CPU time of a child of this process, in ms; undefined when `pid` is gone or not a child. From the
 * scheduler's nanosecond counts of each of its threads (/proc/<pid>/task/<tid>/schedstat) where the
 * kernel keeps them, else from utime + stime in 10 ms ticks: a slice of a benchmark lasts tens of
 * milliseconds, which ticks measure to a few parts only.
 */
function cpuOfChild(pid: string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (Number(fields[1]) !== process.pid) return undefined;
  try {
    let ns = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
    }
    if (Number.isFinite(ns) && ns > 0) return ns / 1e6;
  } catch {
    // no schedstat (a kernel without CONFIG_SCHEDSTATS): the ticks below
  }
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ: 100 ticks a second
}

/** This process's CPU time so far (user + system), in ms. */
export function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
