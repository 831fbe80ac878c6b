// Whether a process is alive, from /proc as the kernel sees it. A zombie (killed, not yet
// reaped by its parent) counts as dead: the GPU driver frees a context when the process exits,
// not when its parent collects the status. The start time (field 22 of /proc/<pid>/stat) tells
// a recycled pid from the process that registered.

import { readFileSync } from "node:fs";

export interface ProcStat {
  state: string;
  startTime: string;
}

export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold blanks: split after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0] ?? "?", startTime: rest[19] ?? "" };
}

/** Whether a listed process computes beside the simulated workloads: a live process the
 * simulator started, never one `sim fault` planted (SimProcess.planted). Its pid was the whole
 * test of it: a planted foreign process counted as a sharer exactly when some unrelated process
 * of the machine held its pid, and halved a stress beside it at random (CI, 6 December 2026). */
export function computesOn(p: { pid: number; planted?: true }): boolean {
  return p.planted !== true && isAlive(p.pid);
}

export function isAlive(pid: number, startTime?: string): boolean {
  const s = procStat(pid);
  if (!s || s.state === "Z" || s.state === "X") return false;
  return startTime === undefined || s.startTime === startTime;
}
