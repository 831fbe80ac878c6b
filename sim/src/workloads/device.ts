// What a CUDA process on the simulated node sees: CUDA_VISIBLE_DEVICES resolved against the
// node's state the way the CUDA driver does it, and each visible device's size.
//
// Rules (reference workloads.md 1.5 and 2.4, mig-reference.md §3 and §5):
// - `MIG-<uuid>` (or the pre-R470 `MIG-GPU-<uuid>/<gi>/<ci>`) names one MIG device; a process
//   enumerates at most one MIG device, so later MIG entries are ignored.
// - `GPU-<uuid>` (a unique prefix is enough, as in CUDA) or an index names a whole GPU. A GPU in
//   MIG mode is not enumerable as a whole: it contributes no device.
// - Unset: every GPU with MIG off. The references infer that a MIG-mode GPU is not enumerable
//   without a MIG UUID (gpu-burn #36: MIG on → "No CUDA devices"); that inference is followed.
// - CUDA stops at the first entry that names nothing; the entries before it stay visible.

import { productFacts, resolveProduct } from "../../../src/mig/catalog/catalog.js";
import type { Architecture } from "../../../src/mig/catalog/types.js";
import type { SimCi, SimGi, SimGpu, SimState } from "../nvsmi/state.js";
import { legacyMigUuid } from "../nvsmi/uuid.js";
import { ciProfileOf, giProfileOf, viewOf } from "../nvsmi/view.js";
import { NON_MIG_MODEL } from "./model.js";

export interface SimDevice {
  /** CUDA ordinal inside this process. */
  ordinal: number;
  gpu: SimGpu;
  /** null for a whole GPU. */
  gi: SimGi | null;
  ci: SimCi | null;
  /** As cudaGetDeviceProperties names it: `NVIDIA H100 80GB HBM3 MIG 1g.10gb`. */
  name: string;
  sm: number;
  /** What cudaMemGetInfo reports as total: the GI's memory, or the board's. */
  memoryMiB: number;
  /** Memory slices of the GI over the GPU's, for bandwidth; 1 for a whole GPU. */
  memoryShare: number;
  product: string;
  boardKey: string;
  architecture: Architecture | undefined;
  /** `0000:07:00`, as the kernel log and nccl-tests print a PCI location. */
  pci: string;
  /** What the runtime reports as the device UUID: the MIG device's own, or the GPU's. */
  uuid: string;
  /** Compute capability, `9.0`. */
  cc: string;
}

// Compute capability per architecture (CUDA programming guide tables); boards without MIG by name.
const CC: Readonly<Record<string, string>> = {
  ampere: "8.0",
  hopper: "9.0",
  blackwell: "10.0",
  L40S: "8.9",
  T4: "7.5",
};

/** `00000000:07:00.0` → `0000:07:00`. */
export function pciOf(gpu: SimGpu): string {
  const m = /^[0-9a-f]*?([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.\d$/i.exec(gpu.pciBusId);
  return m ? `${m[1]}:${m[2]}:${m[3]}`.toLowerCase() : "0000:00:00";
}

function describe(state: SimState, gpu: SimGpu, gi: SimGi | null, ci: SimCi | null) {
  const view = viewOf(state, gpu);
  const base = {
    gpu,
    gi,
    ci,
    product: gpu.product,
    boardKey: gpu.board,
    architecture: view.architecture,
    pci: pciOf(gpu),
    uuid: ci?.uuid ?? gpu.uuid,
    cc: CC[gpu.product] ?? CC[view.architecture ?? ""] ?? "8.0",
  };
  if (gi && ci) {
    const giProfile = giProfileOf(view, gi);
    const slices = view.catalog?.facts.memorySlices ?? 8;
    return {
      ...base,
      name: `${view.smiName} MIG ${ciProfileOf(view, gi, ci).name}`,
      sm: ciProfileOf(view, gi, ci).sm,
      memoryMiB: giProfile.memoryMiB,
      memoryShare: giProfile.memorySlices / slices,
    };
  }
  const product = resolveProduct(gpu.product);
  const sm = product ? productFacts(product).smCount : (NON_MIG_MODEL[gpu.product]?.sm ?? 1);
  return { ...base, name: view.smiName, sm, memoryMiB: view.memoryMiB, memoryShare: 1 };
}

function findMig(state: SimState, token: string): { gpu: SimGpu; gi: SimGi; ci: SimCi } | null {
  const t = token.toLowerCase();
  for (const gpu of state.gpus) {
    if (!gpu.mig.current) continue;
    for (const gi of gpu.gis) {
      for (const ci of gi.cis) {
        const names = [ci.uuid, legacyMigUuid(gpu.uuid, gi.id, ci.id)].map((u) => u.toLowerCase());
        if (names.includes(t)) return { gpu, gi, ci };
      }
    }
  }
  return null;
}

function findGpu(state: SimState, token: string): SimGpu | null | "ambiguous" {
  if (/^\d+$/.test(token)) return state.gpus.find((g) => g.index === Number(token)) ?? null;
  if (!/^GPU-/i.test(token)) return null;
  const hits = state.gpus.filter((g) => g.uuid.toLowerCase().startsWith(token.toLowerCase()));
  if (hits.length > 1) return "ambiguous";
  return hits[0] ?? null;
}

/**
 * The devices a process with this environment sees, in CUDA ordinal order. `fence`: what the
 * job's device cgroup lets it open (../fence.ts), null outside any fence. Inside one the driver
 * enumerates only those devices, so (a reading of the MIG user guide's containers, where only
 * the instance's caps are present and CUDA_VISIBLE_DEVICES is unset; no capture of a fenced
 * Slurm job): unset shows the fenced whole GPUs and the first fenced MIG device; an index counts
 * among the fenced devices (Slurm renumbers CUDA_VISIBLE_DEVICES from 0 under device cgroups);
 * a UUID outside the fence names nothing, so CUDA stops there (workloads.md 4.1: with nothing
 * left, cudaErrorNoDevice "no CUDA-capable device is detected").
 */
export function visibleDevices(
  state: SimState,
  cudaVisibleDevices: string | undefined,
  fence: Set<string> | null = null,
) {
  if (fence) return fencedDevices(state, cudaVisibleDevices, fence);
  const picked: Picked[] = [];
  if (cudaVisibleDevices === undefined) {
    for (const gpu of state.gpus) if (!gpu.mig.current) picked.push({ gpu, gi: null, ci: null });
  } else {
    let migTaken = false;
    for (const raw of cudaVisibleDevices.split(",")) {
      const token = raw.trim();
      if (token === "") break;
      if (/^MIG-/i.test(token)) {
        const mig = findMig(state, token);
        if (!mig) break;
        if (!migTaken) picked.push(mig);
        migTaken = true;
        continue;
      }
      const gpu = findGpu(state, token);
      if (gpu === null || gpu === "ambiguous") break;
      if (gpu.mig.current || picked.some((p) => p.gpu === gpu && p.gi === null)) continue;
      picked.push({ gpu, gi: null, ci: null });
    }
  }
  return described(state, picked);
}

type Picked = { gpu: SimGpu; gi: SimGi | null; ci: SimCi | null };

function described(state: SimState, picked: readonly Picked[]): SimDevice[] {
  return picked.map(
    (p, ordinal): SimDevice => ({ ordinal, ...describe(state, p.gpu, p.gi, p.ci) }),
  );
}

/** What a fenced process can enumerate, in node order. */
function enumerable(state: SimState, fence: Set<string>): Picked[] {
  const out: Picked[] = [];
  for (const gpu of state.gpus) {
    if (!gpu.mig.current) {
      if (fence.has(gpu.uuid.toLowerCase())) out.push({ gpu, gi: null, ci: null });
      continue;
    }
    for (const gi of [...gpu.gis].sort((a, b) => a.id - b.id))
      for (const ci of [...gi.cis].sort((a, b) => a.id - b.id))
        if (fence.has(ci.uuid.toLowerCase())) out.push({ gpu, gi, ci });
  }
  return out;
}

function fencedDevices(state: SimState, cvd: string | undefined, fence: Set<string>) {
  const all = enumerable(state, fence);
  const picked: Picked[] = [];
  const add = (p: Picked) => {
    // A process enumerates at most one MIG device, and each device once.
    if (p.gi && picked.some((x) => x.gi)) return;
    if (!picked.includes(p)) picked.push(p);
  };
  if (cvd === undefined) all.forEach(add);
  else
    for (const raw of cvd.split(",")) {
      const token = raw.trim();
      const hit = /^\d+$/.test(token)
        ? all[Number(token)]
        : all.find((p) => {
            const t = token.toLowerCase();
            const names = p.ci
              ? [p.ci.uuid, legacyMigUuid(p.gpu.uuid, p.gi?.id ?? 0, p.ci.id)]
              : [p.gpu.uuid];
            return names.some((n) =>
              p.ci ? n.toLowerCase() === t : n.toLowerCase().startsWith(t),
            );
          });
      if (!token || !hit) break;
      add(hit);
    }
  return described(state, picked);
}

/** Processes that share a device's compute: the same CI under MIG, the whole GPU otherwise. */
export function onSameUnit(dev: SimDevice, p: { gi: number | null; ci: number | null }): boolean {
  if (!dev.gi) return true;
  return p.gi === dev.gi.id && p.ci === (dev.ci?.id ?? null);
}

/** Processes that share a device's memory: the same GI under MIG, the whole GPU otherwise. */
export function onSameMemory(dev: SimDevice, p: { gi: number | null }): boolean {
  return !dev.gi || p.gi === dev.gi.id;
}

/** A device's entry in the state as it is now (the file may have changed since resolving). */
export function currentGpu(state: SimState, dev: SimDevice): SimGpu | undefined {
  return state.gpus.find((g) => g.index === dev.gpu.index);
}
