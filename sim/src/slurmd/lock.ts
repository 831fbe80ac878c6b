// One sync at a time per cluster: the nodes' Slurm commands run in parallel sessions, and two
// of them restarting the daemons at once would each stop what the other started.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";
import { isAlive } from "../sshd.js";

export async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const lock = join(dir, "sync.lock");
  const end = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch {
      let holder = 0;
      try {
        holder = Number(readFileSync(join(lock, "pid"), "utf8"));
      } catch {
        /* being created or removed */
      }
      // A holder that died (killed mid-sync) leaves its lock behind: take it over.
      if (holder && !isAlive(holder)) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > end)
        throw new SlicecheckError("SLURM", `${lock} is held by pid ${holder} for over 120 s`);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
