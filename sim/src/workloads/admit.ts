// Whether a new CUDA client gets onto a device, decided under the state lock: MPS refuses new
// clients while it recovers from a fatal fault, and memory is what the instance has minus what
// the other processes on it hold (the GI's memory under MIG, the board's without).

import type { SimState } from "../nvsmi/state.js";
import { viewOf } from "../nvsmi/view.js";
import { readChaos } from "./chaos.js";
import { currentGpu, onSameMemory, type SimDevice } from "./device.js";
import { clientLimits, refusesClients } from "./mps.js";

/**
 * What a CUDA context holds before the program allocates anything. Real contexts take a few
 * hundred MiB (the captures' loadgen processes show 4188 MiB with their buffers); the figure is
 * an assumption, small enough that a 1g instance stays almost entirely free.
 */
export const CONTEXT_MIB = 256;

export const MIB = 1024 * 1024;

/** MiB that a new client of `dev` can still allocate, its own context not yet counted. */
export function freeMiB(state: SimState, dev: SimDevice, exceptPid?: number): number {
  const gpu = currentGpu(state, dev);
  const held = (gpu?.processes ?? [])
    .filter((p) => p.pid !== exceptPid && onSameMemory(dev, p))
    .reduce((sum, p) => sum + p.usedMiB, 0);
  // A planted vgpu-fb-leak: the host lets this guest's allocations run on into the card's
  // memory beyond its framebuffer (what the framebuffer check must catch).
  const leak = gpu?.virtualization?.mode === "VGPU" && gpu.virtualization.fbLeak;
  const total = leak ? viewOf(state, gpu).boardMemoryMiB : dev.memoryMiB;
  return Math.max(0, total - held);
}

/**
 * This client's MPS pinned-memory cap in MiB (context included), or null when it has none. The
 * planted `mps-cap-ignored` fault makes the cap vanish, as a server that does not enforce it
 * would: the capped tenant then allocates past it, which the memory-isolation check must catch.
 */
export function capMiB(
  state: SimState,
  dev: SimDevice,
  stateDir?: string,
  env: NodeJS.ProcessEnv = process.env,
): number | null {
  const cap = clientLimits(currentGpu(state, dev), env).memLimitMiB;
  if (cap === null) return null;
  if (stateDir && readChaos(stateDir).mpsCapIgnored) return null;
  return cap;
}

/** What this client may still allocate: the device's free memory, and under an MPS cap what is
 * left of the cap after `heldMiB` (its own context and buffers). */
export function clientFreeMiB(
  state: SimState,
  dev: SimDevice,
  heldMiB: number,
  stateDir?: string,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const free = freeMiB(state, dev);
  const cap = capMiB(state, dev, stateDir, env);
  return cap === null ? free : Math.max(0, Math.min(free, cap - heldMiB));
}

export type Admission = "ok" | "mps-not-ready" | "oom";

/** The client asking: its pid and environment (a process's own unless given). */
export interface Client {
  pid: number;
  env: NodeJS.ProcessEnv;
}

/** Whether a client that needs `needMiB` (context included) may start now. */
export function admit(
  state: SimState,
  dev: SimDevice,
  needMiB: number,
  who: Client = { pid: process.pid, env: process.env },
): Admission {
  const gpu = currentGpu(state, dev);
  if (gpu && refusesClients(gpu)) return "mps-not-ready";
  const cap = capMiB(state, dev, undefined, who.env);
  if (cap !== null && needMiB > cap) return "oom";
  return freeMiB(state, dev, who.pid) >= needMiB ? "ok" : "oom";
}
