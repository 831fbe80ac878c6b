// A simulated GPU joined with what the catalogue says about its product at the node's driver:
// the one place that turns state (IDs) into profiles, names and sizes for the formatters.

import { SlicecheckError } from "../../../src/errors.js";
import { boardMemoryMiB, catalogFor, giProfileById } from "../../../src/mig/catalog/catalog.js";
import type {
  Architecture,
  Catalog,
  CiProfile,
  GiProfile,
  ProductKey,
} from "../../../src/mig/catalog/types.js";
import type { Layout } from "./layout.js";
import { NON_MIG_BOARDS, type SimCi, type SimGi, type SimGpu, type SimState } from "./state.js";

export interface GpuView {
  gpu: SimGpu;
  driver: string;
  /** Absent for GPUs without MIG. */
  catalog?: Catalog;
  architecture?: Architecture;
  smiName: string;
  pciId: string;
  powerCapW: number;
  /** What the GPU shows as its memory: the board's, or in a vGPU guest the vGPU's framebuffer. */
  memoryMiB: number;
  /** The physical board's memory (what a guest's leaking allocation can reach). */
  boardMemoryMiB: number;
}

/** In a vGPU guest nvidia-smi and CUDA show the vGPU type's framebuffer, not the card's. */
function shown(gpu: SimGpu, boardMiB: number): { memoryMiB: number; boardMemoryMiB: number } {
  const fb = gpu.virtualization?.mode === "VGPU" ? gpu.virtualization.framebufferMiB : undefined;
  return { memoryMiB: fb ?? boardMiB, boardMemoryMiB: boardMiB };
}

export function viewOf(state: SimState, gpu: SimGpu): GpuView {
  const nonMig = NON_MIG_BOARDS[gpu.product];
  if (nonMig) {
    return {
      gpu,
      driver: state.driver,
      smiName: nonMig.smiName,
      pciId: nonMig.pciId,
      powerCapW: nonMig.powerCapW,
      ...shown(gpu, nonMig.memoryMiB),
    };
  }
  const catalog = catalogFor(gpu.product as ProductKey, state.driver);
  const board = catalog.facts.boards.find((b) => b.key === gpu.board) ?? catalog.facts.boards[0];
  if (!board) throw new SlicecheckError("SIM", `no board for ${gpu.product}`);
  return {
    gpu,
    driver: state.driver,
    catalog,
    architecture: catalog.facts.architecture,
    smiName: board.smiName,
    pciId: board.pciId,
    powerCapW: board.powerCapW,
    ...shown(gpu, boardMemoryMiB(board, state.driver)),
  };
}

/** The product name as this driver prints it: without `NVIDIA ` before R510. */
export function displayName(view: GpuView, layout: Layout): string {
  return layout.nvidiaPrefix ? view.smiName : view.smiName.replace(/^NVIDIA /, "");
}

export function giProfileOf(view: GpuView, gi: SimGi): GiProfile {
  const p = view.catalog ? giProfileById(view.catalog, gi.profileId) : undefined;
  if (!p) {
    throw new SlicecheckError(
      "SIM",
      `GPU ${view.gpu.index}: GI ${gi.id} has profile ${gi.profileId}, which ${view.gpu.product} does not offer at driver ${view.driver}`,
    );
  }
  return p;
}

export function ciProfileOf(view: GpuView, gi: SimGi, ci: SimCi): CiProfile {
  const p = giProfileOf(view, gi).ciProfiles.find((c) => c.id === ci.profileId);
  if (!p) {
    throw new SlicecheckError(
      "SIM",
      `GPU ${view.gpu.index}: CI ${ci.id} of GI ${gi.id} has unknown CI profile ${ci.profileId}`,
    );
  }
  return p;
}

/**
 * The order `-lgi`, `-lci`, `-dgi` and `-dci` walk GIs in: grouped by NVML profile index, then by
 * GI ID (derived in mig-reference.md §4; fits every capture).
 */
export function listingOrder(view: GpuView, gis: readonly SimGi[] = view.gpu.gis): SimGi[] {
  return [...gis].sort(
    (a, b) => giProfileOf(view, a).nvmlIndex - giProfileOf(view, b).nvmlIndex || a.id - b.id,
  );
}

/** MIG devices as `-L` and the `MIG devices` table list them: by GI ID, then CI ID. */
export function migDevices(view: GpuView): { gi: SimGi; ci: SimCi }[] {
  const out: { gi: SimGi; ci: SimCi }[] = [];
  for (const gi of [...view.gpu.gis].sort((a, b) => a.id - b.id)) {
    for (const ci of [...gi.cis].sort((a, b) => a.id - b.id)) out.push({ gi, ci });
  }
  return out;
}

/**
 * Framebuffer in use in a GI: what a workload recorded, else the driver's own reservation plus
 * the processes in it. Idle GIs show 12–15 MiB per memory slice in the captures (12 and 25 MiB on
 * A30/535, 15 MiB on H100/580); 12.5 MiB per slice is used.
 */
export function giUsedMiB(view: GpuView, gi: SimGi): number {
  if (gi.memoryUsedMiB !== undefined) return gi.memoryUsedMiB;
  const procs = view.gpu.processes.filter((p) => p.gi === gi.id);
  return Math.floor(gi.size * 12.5) + procs.reduce((s, p) => s + p.usedMiB, 0);
}

export function gpuUsedMiB(view: GpuView): number {
  const t = view.gpu.telemetry.memoryUsedMiB;
  if (t !== undefined) return t;
  if (view.gpu.mig.current) return view.gpu.gis.reduce((s, gi) => s + giUsedMiB(view, gi), 0);
  return view.gpu.processes.reduce((s, p) => s + p.usedMiB, 0);
}

/** Whether anything keeps the GPU open: processes or driver clients. */
export function gpuBusy(gpu: SimGpu): boolean {
  return gpu.processes.length > 0 || gpu.holders.length > 0;
}

/**
 * The GPUs an `-i` argument names: indices, bus IDs or UUIDs, comma-separated. undefined when
 * one of them matches no GPU.
 */
export function selectGpus(state: SimState, ids: string | undefined): SimGpu[] | undefined {
  if (ids === undefined) return state.gpus;
  const out: SimGpu[] = [];
  for (const raw of ids.split(",")) {
    const id = raw.trim();
    const g = state.gpus.find(
      (x) =>
        (/^\d+$/.test(id) && x.index === Number(id)) ||
        x.uuid.toLowerCase() === id.toLowerCase() ||
        x.pciBusId.toLowerCase() === id.toLowerCase() ||
        x.pciBusId.toLowerCase().endsWith(`:${id.toLowerCase()}`),
    );
    if (!g) return undefined;
    if (!out.includes(g)) out.push(g);
  }
  return out;
}
