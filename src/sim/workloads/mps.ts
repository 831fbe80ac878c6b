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
import { isAlive } from "./proc.js";

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
    .filter((p) => p.pid !== pid && sameUnit(p, unit) && isAlive(p.pid))
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
