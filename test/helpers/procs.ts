// Parents and children among this machine's processes, read from /proc/PID/stat (the command
// name, field 2, is in parentheses and may hold blanks: the fields are split after the last ')').
import { readdirSync, readFileSync } from "node:fs";

/** The fields of /proc/PID/stat after the command name (state first, then ppid, pgrp, …); null
 * when it is gone. */
export function statFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** The parent pid of `pid`; 0 when it is gone. */
export function parentOf(pid: number | string): number {
  return Number(statFields(pid)?.[1] ?? 0);
}

/** The pids whose parent is `ppid` (sshd's sessions below its listener, say). */
export function childrenOf(ppid: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d) && parentOf(d) === ppid)
    .map(Number);
}

/** Pids of processes on this machine whose environment holds exactly `NAME=value`. */
export function taggedPids(entry: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/environ`, "latin1").split("\0").includes(entry))
        out.push(Number(d));
    } catch {
      /* gone or not ours */
    }
  }
  return out;
}

export async function waitFor(
  cond: () => boolean,
  timeoutMs: number,
  stepMs = 200,
): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  return cond();
}
