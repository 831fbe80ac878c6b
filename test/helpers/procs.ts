// Parents and children among this machine's processes, read from /proc/PID/stat (the command
// name, field 2, is in parentheses and may hold blanks: the fields are split after the last ')').
import { readdirSync, readFileSync } from "node:fs";

/** The parent pid of `pid`; 0 when it is gone. */
export function parentOf(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}

/** The pids whose parent is `ppid` (sshd's sessions below its listener, say). */
export function childrenOf(ppid: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d) && parentOf(d) === ppid)
    .map(Number);
}
