// Planted isolation faults (sim/src/faults.ts) as the simulated workloads see them: flags in
// <state>/chaos.json, and the fault events aggressors leave there so that, with isolation
// broken, their neighbours on the same GPU can suffer from them. Without a flag nothing here
// changes what a workload does: MIG instances stay isolated.
import { existsSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { withLock } from "../nvsmi/lock.js";

export const CHAOS_FILE = "chaos.json";

export interface ChaosEventRecord {
  gpu: number;
  gi: number | null;
  ci: number | null;
  kind: "oom" | "crash" | "kill" | "hang";
  atMs: number;
  /** A fault that lasts (an OOM holding the memory): it reaches whatever runs until then. */
  untilMs?: number;
}

export interface ChaosFlags {
  isolationBroken?: boolean;
  /** MPS does not enforce CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (admit.ts capMiB). */
  mpsCapIgnored?: boolean;
  xidMisattributed?: boolean;
  /** One rank per MIG instance: NCCL claims P2P between instances of one GPU (allreduce.ts). */
  migP2pClaimed?: boolean;
  hang?: boolean;
  /** train-step's all_reduce returns a wrong gradient: its check counts it (faults-train.ts). */
  wrongGradient?: boolean;
  /** The next simulated workload (of `program`, or any) kills its own sshd session. */
  dropConnection?: { program: string | null } | null;
  events?: ChaosEventRecord[];
  /** `sim fault serve-slow`: the serve on this GPU (this GI, or any when null) gets its p99
   * multiplied by `factor` once a neighbour runs out of memory: a planted latency leak. */
  serveSlow?: { gpu: number; gi: number | null; factor: number };
}

export function readChaos(stateDir: string): ChaosFlags {
  const file = join(stateDir, CHAOS_FILE);
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as ChaosFlags;
  } catch {
    return {};
  }
}

export function writeChaos(stateDir: string, c: ChaosFlags): void {
  writeFileSync(join(stateDir, CHAOS_FILE), `${JSON.stringify(c)}\n`);
}

export async function updateChaos<T>(stateDir: string, fn: (c: ChaosFlags) => T): Promise<T> {
  return withLock(stateDir, () => {
    const c = readChaos(stateDir);
    const r = fn(c);
    writeChaos(stateDir, c);
    return r;
  });
}

/** Recorded only while an isolation fault is planted, so that healthy nodes keep no list. */
export async function recordChaosEvent(
  stateDir: string,
  e: Omit<ChaosEventRecord, "atMs" | "untilMs">,
  lastsMs?: number,
) {
  const c = readChaos(stateDir);
  if (!c.isolationBroken && !c.hang && !c.serveSlow) return;
  await updateChaos(stateDir, (x) => {
    const atMs = Date.now();
    const ev: ChaosEventRecord = { ...e, atMs, ...(lastsMs ? { untilMs: atMs + lastsMs } : {}) };
    x.events = [...(x.events ?? []), ev].slice(-100);
  });
}

/** A fault of `kinds` on another unit of the same GPU since `sinceMs`, when `flag` is planted. */
export function neighbourFault(
  stateDir: string,
  unit: { gpu: number; gi: number | null; ci: number | null },
  sinceMs: number,
  kinds: readonly ChaosEventRecord["kind"][],
  flag: "isolationBroken" | "hang" | "serveSlow",
): boolean {
  const c = readChaos(stateDir);
  if (!c[flag]) return false;
  return (c.events ?? []).some(
    (e) =>
      e.gpu === unit.gpu &&
      (e.gi !== unit.gi || e.ci !== unit.ci) &&
      (e.untilMs ?? e.atMs) >= sinceMs &&
      e.atMs <= Date.now() &&
      kinds.includes(e.kind),
  );
}

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may contain spaces: the fields follow the last ')'.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(rest[1]);
    return Number.isInteger(ppid) && ppid > 1 ? ppid : null;
  } catch {
    return null;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ").trim();
  } catch {
    try {
      return readlinkSync(`/proc/${pid}/exe`);
    } catch {
      return "";
    }
  }
}

/**
 * drop-connection: once, the first workload that sees the flag clears it and SIGKILLs the sshd
 * process serving its session (`sshd: user@notty`), as a network drop or an sshd restart would
 * end every channel of the connection. Returns whether it did.
 */
export async function maybeDropConnection(
  stateDir: string,
  program: string,
  pid: number,
): Promise<boolean> {
  const planted = readChaos(stateDir).dropConnection;
  if (!planted || (planted.program !== null && planted.program !== program)) return false;
  const mine = await updateChaos(stateDir, (c) => {
    const p = c.dropConnection;
    if (!p || (p.program !== null && p.program !== program)) return false;
    c.dropConnection = null;
    return true;
  });
  if (!mine) return false;
  let session: number | null = null;
  for (let p = parentOf(pid); p !== null; p = parentOf(p)) {
    const cmd = cmdline(p);
    if (/^sshd(?:-session)?:? .*@/.test(cmd) || /^sshd-session\b/.test(cmd)) {
      session = p;
      break;
    }
    if (session === null && /^sshd: /.test(cmd) && !/\[listener\]/.test(cmd)) session = p;
  }
  if (session === null) return false;
  process.kill(session, "SIGKILL");
  return true;
}
