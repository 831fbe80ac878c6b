// CUDA MPS on the simulated node: whether the control daemon serves a GPU (`SimGpu.mps`, set by
// the simulated nvidia-cuda-mps-control) and what a fatal fault does under it. Reference
// workloads.md 4.5 and 5.1: under MPS "a fatal exception in one client kills all clients on
// that GPU", the others get the same error (NVIDIA forum t/238139: the faulting process
// "triggers a fatal GPU exception on all the client[s]"), and new clients are refused with
// cudaErrorMpsServerNotReady until every affected client has exited.
//
// Scope: one MPS server serves one CUDA device, so the fault reaches the clients of the same
// compute unit: the whole GPU when MIG is off, the same MIG device when it is on (the
// references are silent on MPS inside MIG; containment by the MIG boundary is the conservative
// reading). Every function here runs under the state lock.

import type { SimGpu, SimProcess, SimState } from "../nvsmi/state.js";
import { computesOn, isAlive } from "./proc.js";

export function mpsActive(gpu: SimGpu): boolean {
  return gpu.mps?.active === true;
}

function sameUnit(a: SimProcess, b: { gi: number | null; ci: number | null }): boolean {
  return a.gi === b.gi && a.ci === b.ci;
}

/**
 * The fault of `pid` on `gpu` dooms every other live client of its unit; returns their pids.
 * Nothing happens without MPS: separate contexts keep their own faults.
 */
export function doomPeers(
  gpu: SimGpu,
  pid: number,
  unit: { gi: number | null; ci: number | null },
  errorCode: number,
): number[] {
  if (!gpu.mps?.active) return [];
  const peers = gpu.processes
    .filter((p) => p.pid !== pid && sameUnit(p, unit) && computesOn(p))
    .map((p) => p.pid);
  const doomed = [...new Set([...(gpu.mps.doomed ?? []), ...peers])];
  gpu.mps = { active: true, ...(doomed.length > 0 ? { doomed, error: errorCode } : {}) };
  return peers;
}

/** The error a doomed client must die of, or null. */
export function doomOf(state: SimState, gpuIndex: number, pid: number): number | null {
  const gpu = state.gpus.find((g) => g.index === gpuIndex);
  if (!gpu?.mps?.doomed?.includes(pid)) return null;
  return gpu.mps.error ?? 700;
}

/** New clients are refused while a doomed client is still alive. */
export function refusesClients(gpu: SimGpu): boolean {
  return mpsActive(gpu) && (gpu.mps?.doomed ?? []).some((p) => isAlive(p));
}

/** Drops exited clients from the doomed list (and `pid`, which is exiting). */
export function forgetClients(gpu: SimGpu, exiting?: number): boolean {
  const doomed = gpu.mps?.doomed;
  if (!gpu.mps || !doomed) return false;
  const left = doomed.filter((p) => p !== exiting && isAlive(p));
  if (left.length === doomed.length) return false;
  gpu.mps =
    left.length > 0
      ? { active: gpu.mps.active, doomed: left, error: gpu.mps.error ?? 700 }
      : { active: gpu.mps.active };
  return true;
}

/** The control daemon starts or quits; quitting also ends a pending fault recovery. */
export function setDaemon(gpu: SimGpu, active: boolean): boolean {
  const was = gpu.mps?.active === true;
  if (active) {
    gpu.mps = { ...(gpu.mps ?? {}), active: true };
  } else {
    delete gpu.mps;
  }
  return was !== active;
}

/**
 * A client's own MPS limits from its environment (reference workloads.md 5.1): the pinned
 * device memory cap `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` and `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`.
 * They mean something only to an MPS client: without a daemon serving the GPU they are ignored,
 * as the CUDA driver ignores them. The reference is silent on the value format; NVIDIA's MPS
 * documentation writes `0=1G,1=512M` (device ordinal = size with a K/M/G suffix), and that is
 * what is read here. A value that does not parse is ignored: the conservative reading is that
 * no cap was set, so the harness never credits a promise the client did not get.
 */
export function clientLimits(
  gpu: SimGpu | undefined,
  env: NodeJS.ProcessEnv,
  ordinal = 0,
): { memLimitMiB: number | null; threadPct: number | null } {
  if (!gpu || !mpsActive(gpu)) return { memLimitMiB: null, threadPct: null };
  let memLimitMiB: number | null = null;
  for (const part of (env.CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ?? "").split(",")) {
    const m = /^\s*(\d+)\s*=\s*(\d+)\s*([KMG])B?\s*$/i.exec(part);
    if (!m || Number(m[1]) !== ordinal) continue;
    const k = { K: 1 / 1024, M: 1, G: 1024 }[m[3]!.toUpperCase() as "K" | "M" | "G"];
    memLimitMiB = Math.floor(Number(m[2]) * k);
  }
  const raw = env.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE;
  const pct = raw !== undefined && /^\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : null;
  return { memLimitMiB, threadPct: pct !== null && pct > 0 && pct <= 100 ? pct : null };
}

/**
 * The share of its unit's peak a client computes at. Without MPS the unit is time-sliced: every
 * live process gets an equal share. Under MPS clients run side by side on the SMs, each on at
 * most its active-thread percentage; when their percentages add up to more than the unit, they
 * share it in proportion (a model: the references give no figure for oversubscription).
 */
export function computeShare(
  gpu: SimGpu | undefined,
  peers: readonly SimProcess[],
  myPct: number | null,
): number {
  if (!gpu || !mpsActive(gpu)) return 1 / (peers.length + 1);
  const mine = myPct ?? 100;
  const total = peers.reduce((sum, p) => sum + (p.threadPct ?? 100), mine);
  return Math.min(mine / 100, mine / total);
}
