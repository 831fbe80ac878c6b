// What becomes of a resident client's process-list entries once the client dies. registry.ts's
// guardian, a detached bash per registered process that polls its pid every 0.2 s, was a spawn of
// this process (a fork of a Node heap) and a bash start for every workload it ran, one at a time
// in its event loop, and 28 polls every 0.2 s while 4 nodes' stress ran.
//
// Here the resident does it itself, since every program it runs is a client's and it sees each
// client's end (workloads.ts): an end it is told of, or the control connection closing, which is
// the client's death. A registration that lands after its client ended (the client died while it
// was in flight) is undone at once (`watch`). What the resident cannot see is its own death: one
// guardian for all its clients, started with the first registration, is told which clients have
// entries ("+ PID DIR") and which are done ("- PID"). When its stdin ends (the resident is gone),
// it waits for each listed client to die, as the driver frees a dead process's context, and runs
// the reaper for that client's node. It is detached and carries no run tag (PATH alone), as
// registry.ts's guardians are. Where there is no bash (associative arrays) or a folder has a line
// break, registry.ts's own guardian watches that process.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import {
  BASH,
  DEAD_STATE,
  hasMarker,
  reaperArgv,
  startGuardian,
  unregister,
} from "../workloads/registry.js";

// $1... is the reaper's command line; the folder is added last. A pid whose /proc entry is gone,
// a zombie or dead, is a dead client; its marker still there means it never removed its entries.
const SCRIPT = `exec 2>/dev/null
declare -A D
while read -r op p d; do case $op in +) D[$p]=$d ;; -) unset "D[$p]" ;; esac; done
while [ \${#D[@]} -gt 0 ]; do
  for p in "\${!D[@]}"; do
    if read -r s < "/proc/$p/stat"; then case $s in ${DEAD_STATE}) ;; *) continue ;; esac; fi
    d=\${D[$p]}; unset "D[$p]"
    [ -e "$d/procs/$p" ] && "$@" "$d"
  done
  sleep 0.2
done`;

let guardian: ChildProcess | null = null;

function started(): ChildProcess | null {
  if (guardian) return guardian;
  if (!existsSync(BASH)) return null;
  const child = spawn(BASH, ["-c", SCRIPT, "guard", ...reaperArgv()], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
  });
  const gone = () => {
    // Killed by someone: the clients it knew of are not watched any more; the next
    // registration starts another, and a node's next workload prunes the dead.
    if (guardian === child) guardian = null;
  };
  child.on("error", gone);
  child.on("exit", gone);
  child.stdin?.on("error", gone);
  child.unref();
  guardian = child;
  return child;
}

/** The clients whose programs run: their entries are watched from registration to their end. */
const live = new Set<number>();

export function clientStarted(pid: number): void {
  live.add(pid);
}

/**
 * The client's program has ended (its own exit, a signal, or the client's death): entries it left
 * go now, and the guardian forgets it.
 */
export async function clientEnded(pid: number, stateDir: string | undefined): Promise<void> {
  live.delete(pid);
  guardian?.stdin?.write(`- ${pid}\n`);
  if (stateDir && hasMarker(stateDir, pid)) await unregister(stateDir, pid).catch(() => {});
}

/** registry.ts's watch of a registered process, in the resident (registry.watchDeathsWith). */
export function watch(stateDir: string, pid: number): void {
  if (!live.has(pid)) return void unregister(stateDir, pid).catch(() => {});
  const g = stateDir.includes("\n") ? null : started();
  if (g?.stdin?.writable) g.stdin.write(`+ ${pid} ${stateDir}\n`);
  else startGuardian(stateDir, pid);
}
