// The simulated workloads' entries in the node's process list (what `nvidia-smi` shows under
// Processes and `--query-compute-apps`). A workload adds itself when it has "created its
// context" and removes itself on every exit it controls (normal end, CUDA error, SIGTERM).
//
// A SIGKILLed process cannot remove itself, and on a real node the driver frees a dead process's
// context at once. So each registered process leaves a marker (<state>/procs/<pid>, with its
// start time) and starts a guardian: a detached `sh` that waits for the pid to die and then runs
// reap.ts, which drops the entries of dead marked pids under the lock. The guardian is detached
// (its own session) so that the process-group kill that took the workload down does not take it
// too; it carries no run tag (empty environment but PATH) and ends right after the workload. The
// resident simulator, which sees its clients end, keeps one guardian for all of them instead
// (watchDeathsWith, resident/guard.ts).
// Entries without a marker (planted by `sim fault foreign-process`, or set by tests) are never
// pruned: they stand for processes that this simulator does not run.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SimProcess, SimState } from "../nvsmi/state.js";
import { updateState } from "../nvsmi/state.js";
import { forgetClients } from "./mps.js";
import { isAlive, procStat } from "./proc.js";

const PROCS_DIR = "procs";

export interface Registration {
  gpu: number;
  gi: number | null;
  ci: number | null;
  usedMiB: number;
  threadPct?: number;
}

function markerPath(stateDir: string, pid: number): string {
  return join(stateDir, PROCS_DIR, String(pid));
}

function markedStart(stateDir: string, pid: number): string | null {
  try {
    const m = JSON.parse(readFileSync(markerPath(stateDir, pid), "utf8")) as { start?: unknown };
    return typeof m.start === "string" ? m.start : "";
  } catch {
    return null;
  }
}

/** Removes the entries of marked processes that are gone. Call under the lock. */
export function pruneDead(state: SimState, stateDir: string): boolean {
  let changed = false;
  const verdict = new Map<number, boolean>();
  const dead = (pid: number): boolean => {
    let d = verdict.get(pid);
    if (d === undefined) {
      const start = markedStart(stateDir, pid);
      d = start !== null && !isAlive(pid, start === "" ? undefined : start);
      verdict.set(pid, d);
    }
    return d;
  };
  for (const gpu of state.gpus) {
    const kept = gpu.processes.filter((p) => !dead(p.pid));
    if (kept.length !== gpu.processes.length) {
      gpu.processes = kept;
      changed = true;
    }
    if (forgetClients(gpu)) changed = true;
  }
  let markers: string[] = [];
  try {
    markers = readdirSync(join(stateDir, PROCS_DIR));
  } catch {
    // No workload ever registered on this node.
  }
  for (const name of markers) {
    const pid = Number(name);
    if (Number.isInteger(pid) && dead(pid)) rmSync(markerPath(stateDir, pid), { force: true });
  }
  return changed;
}

/**
 * Adds this process's entries, atomically with `decide`, which sees the pruned state and says
 * what to register (nothing: refused, e.g. out of memory or MPS recovering) and what to return.
 */
export async function register<T>(
  stateDir: string,
  name: string,
  pid: number,
  decide: (state: SimState) => { entries: Registration[]; result: T },
): Promise<T> {
  const { registered, result } = await updateState(stateDir, (state) => {
    const pruned = pruneDead(state, stateDir);
    const d = decide(state);
    for (const e of d.entries) {
      const gpu = state.gpus.find((g) => g.index === e.gpu);
      const entry: SimProcess = { pid, name, type: "C", gi: e.gi, ci: e.ci, usedMiB: e.usedMiB };
      if (e.threadPct !== undefined) entry.threadPct = e.threadPct;
      gpu?.processes.push(entry);
    }
    if (d.entries.length > 0) {
      mkdirSync(join(stateDir, PROCS_DIR), { recursive: true });
      writeFileSync(
        markerPath(stateDir, pid),
        JSON.stringify({ start: procStat(pid)?.startTime ?? "", tool: name }),
      );
    }
    return {
      changed: pruned || d.entries.length > 0,
      result: { registered: d.entries.length > 0, result: d.result },
    };
  });
  if (registered) watchDeath(stateDir, pid);
  return result;
}

/** Whether `pid` still has a marker, i.e. registered entries it has not removed itself. */
export function hasMarker(stateDir: string, pid: number): boolean {
  return existsSync(markerPath(stateDir, pid));
}

/** Who sees to it that a registered process's entries go when it dies without removing them:
 * by default a guardian process of its own (below); the resident simulator, whose programs run
 * for client processes whose deaths it sees, does it itself (resident/guard.ts). */
let watchDeath: (stateDir: string, pid: number) => void = startGuardian;

export function watchDeathsWith(watch: (stateDir: string, pid: number) => void): void {
  watchDeath = watch;
}

/** The reaper's command line, its state folder to follow: this Node, with its flags. */
export function reaperArgv(): string[] {
  const here = fileURLToPath(import.meta.url);
  // Under tsx (tests) this module is registry.ts and the reaper reap.ts; compiled, both are .js.
  return [process.execPath, ...process.execArgv, join(dirname(here), `reap${extname(here)}`)];
}

/** Removes the entries of `pid` (and lets MPS forget it). Safe to call twice. */
export async function unregister(stateDir: string, pid: number): Promise<void> {
  await updateState(stateDir, (state) => {
    let changed = pruneDead(state, stateDir);
    for (const gpu of state.gpus) {
      const kept = gpu.processes.filter((p) => p.pid !== pid);
      if (kept.length !== gpu.processes.length) {
        gpu.processes = kept;
        changed = true;
      }
      if (forgetClients(gpu, pid)) changed = true;
    }
    rmSync(markerPath(stateDir, pid), { force: true });
    return { changed, result: undefined };
  });
}

// Waits for the pid to end (a zombie counts as ended), then execs the reaper, unless the
// process removed its own marker (every exit it controls): the reaper is a Node process, 0.13 s
// of CPU on 2 slow cores, and would find nothing to drop. It polls every 0.2 s. Under bash the
// pause is bash's own `read -t` on a pipe nobody writes to, not a `sleep` process: five forks a
// second per workload were 0.28 s of CPU per 10 s each on 2 loaded cores (0.01 s with read -t),
// and a 4-node run has 28 workloads at once. Where the pipe cannot be made, or without bash, it
// sleeps as before; a read that ends early (end of file) sleeps too, so it never spins.
/** A `case` pattern for a /proc/PID/stat line (in $s) of a process that is dead: a zombie, or
 * gone (X). A guardian's wait ends there, as the driver frees a dead process's context. */
export const DEAD_STATE = `*") Z "*|*") X "*`;

const guard = (setup: string, pause: string) => `P=$1; M=$2; shift 2; exec 2>/dev/null
${setup}
while read -r s < /proc/$P/stat; do case "$s" in ${DEAD_STATE}) break;; esac; ${pause}; done
[ -e "$M" ] || exit 0
exec "$@"`;

export const BASH = "/bin/bash";
const [GUARD_SHELL, GUARD] = existsSync(BASH)
  ? [
      BASH,
      guard(
        "exec 9<> <(:) || exec 9</dev/null",
        "read -r -t 0.2 -u 9 _ || [ $? -gt 128 ] || sleep 0.2",
      ),
    ]
  : ["/bin/sh", guard(":", "sleep 0.2")];

/** The pids a guardian watches (one each: a process registers once or more; the resident
 * simulator registers for many clients). */
const guarded = new Set<number>();

export function startGuardian(stateDir: string, pid: number): void {
  if (guarded.has(pid)) return;
  guarded.add(pid);
  const child = spawn(
    GUARD_SHELL,
    ["-c", GUARD, "sh", String(pid), markerPath(stateDir, pid), ...reaperArgv(), stateDir],
    { detached: true, stdio: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  child.on("error", () => {
    // No sh: a SIGKILLed entry then stays until the next workload prunes it.
  });
  child.on("exit", () => guarded.delete(pid));
  child.unref();
}
