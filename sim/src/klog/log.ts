// The simulated node's kernel ring buffer: <state>/kmsg.log, one record per line in the
// /dev/kmsg form (`<level>,<seq>,<usec since boot>,-;<text>`), and the node's boot time in
// <state>/boot.json. The simulated dmesg prints it the way util-linux does; writers append under
// the state lock so that timestamps and sequence numbers only grow.
//
// Boot time: fixed at the first use of the log to "now minus the host's uptime", so that the
// `[ 1234.567890]` stamps look like a machine that has been up for a while, and never changes
// afterwards (a simulated reboot does not reset it; nothing in the harness reads uptime).

import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { uptime } from "node:os";
import { join } from "node:path";
import { withLock } from "../nvsmi/lock.js";

export const KMSG_FILE = "kmsg.log";
export const BOOT_FILE = "boot.json";

/** printk levels (include/linux/kern_levels.h). */
export const KERN = { err: 3, warning: 4, info: 6 } as const;

export interface KernelRecord {
  level: number;
  seq: number;
  /** Microseconds since boot. */
  usec: number;
  text: string;
}

/** Epoch milliseconds of the simulated boot; created on first call, never rewritten. */
export function bootTimeMs(stateDir: string): number {
  const file = join(stateDir, BOOT_FILE);
  try {
    const b = JSON.parse(readFileSync(file, "utf8")) as { bootEpochMs?: unknown };
    if (typeof b.bootEpochMs === "number") return b.bootEpochMs;
  } catch {
    // Not created yet.
  }
  const boot = Math.round(Date.now() - uptime() * 1000);
  try {
    // `wx`: of two first callers only one writes; the other reads what it wrote.
    writeFileSync(file, `${JSON.stringify({ bootEpochMs: boot })}\n`, { flag: "wx" });
    return boot;
  } catch {
    return bootTimeMs(stateDir);
  }
}

const RECORD = /^(\d+),(\d+),(\d+),[^;]*;(.*)$/;

export function readKernelLog(stateDir: string): KernelRecord[] {
  let text: string;
  try {
    text = readFileSync(join(stateDir, KMSG_FILE), "utf8");
  } catch {
    return [];
  }
  const out: KernelRecord[] = [];
  for (const line of text.split("\n")) {
    const m = RECORD.exec(line);
    if (m) out.push({ level: Number(m[1]), seq: Number(m[2]), usec: Number(m[3]), text: m[4]! });
  }
  return out;
}

/**
 * Appends lines stamped with the current time; `before` sees the log as it is (under the lock)
 * and may add lines in front, e.g. the once-per-GPU banner that precedes a GPU's first Xid.
 */
export async function appendKernelLog(
  stateDir: string,
  texts: readonly string[],
  level: number = KERN.warning,
  before?: (log: KernelRecord[]) => string[],
): Promise<void> {
  const boot = bootTimeMs(stateDir);
  await withLock(stateDir, () => {
    const log = readKernelLog(stateDir);
    const last = log.at(-1);
    let seq = last ? last.seq + 1 : 0;
    // Records of one call share a stamp a microsecond apart, as a burst of printk calls does.
    let usec = Math.max(Math.round((Date.now() - boot) * 1000), (last?.usec ?? 0) + 1);
    const lines = [...(before?.(log) ?? []), ...texts].map((t) => {
      const record = `${level},${seq++},${usec++},-;${t.replaceAll("\n", " ")}\n`;
      return record;
    });
    appendFileSync(join(stateDir, KMSG_FILE), lines.join(""));
  });
}

/** `dmesg --clear`. */
export async function clearKernelLog(stateDir: string): Promise<void> {
  await withLock(stateDir, () => writeFileSync(join(stateDir, KMSG_FILE), ""));
}
