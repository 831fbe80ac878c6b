// One sync at a time per cluster: the nodes' Slurm commands run in parallel sessions, and two
// of them restarting the daemons at once would each stop what the other started.
//
// The lock is the kernel's (flock(1) on sync.lock, held by a child that lives until its stdin
// closes), not a folder with a pid in it: a holder that dies, however, lets go at once, and no
// waiter can take over a lock that has meanwhile passed to a live holder (the pid folder let a
// waiter that read a dead holder's pid remove the next holder's fresh lock).
import { spawn } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";

const WAIT_S = 120;

/** Resolves once the lock is held, with the function that lets it go: it resolves once the
 * holder has exited, since a caller that goes on to block its event loop (the wrapper's
 * spawnSync of the Slurm command) would otherwise keep the pipe, and so the lock, open while
 * that command runs, and a Slurm command inside the job would wait on it. */
function acquire(file: string): Promise<() => Promise<void>> {
  const holder = spawn(
    "flock",
    ["-x", "-w", String(WAIT_S), file, "sh", "-c", "echo held; cat >/dev/null"],
    {
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  let err = "";
  holder.stderr.on("data", (d) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    holder.on("error", (e) =>
      reject(new SlicecheckError("SLURM", `flock on ${file} could not start: ${e.message}`)),
    );
    const closed = new Promise<void>((r) => holder.once("close", () => r()));
    holder.on("close", (code) =>
      reject(
        new SlicecheckError(
          "SLURM",
          `${file} stayed locked for over ${WAIT_S} s (flock exit ${code}${err.trim() ? `: ${err.trim()}` : ""})`,
        ),
      ),
    );
    holder.stdout.once("data", () =>
      resolve(() => {
        holder.stdin.end();
        return closed;
      }),
    );
  });
}

/** Present while a holder is inside (and after one that died there, until the next holder is
 * done): a sync may be stopping and starting the daemons, so "in sync" cannot be taken from the
 * files without the lock (cluster.ts syncSlurm). */
const BUSY = "sync.busy";

export function syncUnderWay(dir: string): boolean {
  return existsSync(join(dir, BUSY));
}

export async function withLock<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const release = await acquire(join(dir, "sync.lock"));
  try {
    writeFileSync(join(dir, BUSY), `${process.pid}\n`);
    const out = await fn();
    rmSync(join(dir, BUSY), { force: true });
    return out;
  } finally {
    await release();
  }
}
