// The GPU clients of a simulated node that are not CUDA processes (state `holders`): daemons
// such as nvidia-persistenced and DCGM's nv-hostengine, and the nvidia_drm kernel module. They
// block MIG mode changes and GPU resets (mig-reference.md §7). A real node shows them through
// `pgrep` and `lsmod`, so the simulated node answers those two for them: a harness that reads
// them the real way sees the simulated ones, and never the host machine's own daemons.

import { readState } from "../nvsmi/state.js";

/** Holders that are kernel modules (lsmod), not processes (pgrep). */
export const MODULE_CLIENTS: readonly string[] = ["nvidia_drm"];

/** Daemons the simulated node owns: pgrep answers for these from the state, never the host. */
export const DAEMON_CLIENTS: readonly string[] = [
  "nvidia-persistenced",
  "nv-hostengine",
  "nv-fabricmanager",
];

/** Every client any GPU of the node holds, once. */
export function nodeClients(stateDir: string): string[] {
  try {
    const state = readState(stateDir);
    return [...new Set(state.gpus.flatMap((g) => g.holders ?? []))];
  } catch {
    // No GPU state (a node without a driver): no driver clients either.
    return [];
  }
}

/** A stable pid per daemon name, so that two calls agree. */
export function fakePid(name: string): number {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) % 30_000;
  return 1_000 + h;
}
