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

export function isAlive(pid: number, startTime?: string): boolean {
  const s = procStat(pid);
  if (!s || s.state === "Z" || s.state === "X") return false;
  return startTime === undefined || s.startTime === startTime;
}
