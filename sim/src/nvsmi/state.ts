// The simulated node's GPU state, kept as JSON in <stateDir>/gpus.json: what the simulated
// nvidia-smi reads and changes, and what other simulated tools (workloads, fault injectors) read
// and change too. Writes go through a lock and a rename, so concurrent callers see either the
// old or the new file, never a torn one.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";
import { productFacts, resolveBoard, resolveProduct } from "../../../src/mig/catalog/catalog.js";
import { parseDriver } from "../../../src/mig/catalog/driver.js";
import { withLock } from "./lock.js";
import { gpuUuid } from "./uuid.js";

export const STATE_FILE = "gpus.json";

export interface SimCi {
  id: number;
  profileId: number;
  start: number;
  size: number;
  /** `MIG-…` (R470+ form); the pre-R470 form is derived when printing. */
  uuid: string;
}

export interface SimGi {
  id: number;
  profileId: number;
  start: number;
  size: number;
  cis: SimCi[];
  /** Measured framebuffer use of the GI, when a workload or a test set it. */
  memoryUsedMiB?: number;
}

export interface SimProcess {
  pid: number;
  name: string;
  type: "C" | "G" | "C+G";
  /** null: a client of the whole GPU (no MIG, or a tool holding /dev/nvidiaN). */
  gi: number | null;
  ci: number | null;
  usedMiB: number;
  /** Under MPS, the client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (sim/workloads/mps.ts). */
  threadPct?: number;
  /** A planted tenant (`sim fault NODE tenant`): the mean share, 0-100, of its unit's SMs it
   * keeps busy; each reading jitters around it (tenant.ts). */
  busyPct?: number;
  /** Planted by `sim fault` (foreign-process, tenant): no real process stands for it, so it is
   * never taken for alive or dead by its pid, which a real process of this machine may hold at
   * any moment (pid_max is 32768 on the CI machine). It holds its memory and shows in every
   * listing; the simulated workloads do not time-slice with it (workloads/proc.ts computesOn).
   * The references are silent on what a foreign process computes: it is taken as an idle
   * holder, which keeps every figure beside it deterministic. */
  planted?: true;
}

/** Values a real board measures; ours are settable so that tests can mirror a capture. */
export interface SimTelemetry {
  /** null prints N/A (passively cooled boards). */
  fanPercent: number | null;
  tempC: number;
  perf: string;
  powerDrawW: number;
  gpuUtilPercent: number;
  /** Overrides the framebuffer use the simulator would compute. */
  memoryUsedMiB?: number;
}

export interface SimGpu {
  index: number;
  /** A catalogue product key, or a key of NON_MIG_BOARDS. */
  product: string;
  /** Board key within the product (`SXM5`, `PCIe`). */
  board: string;
  uuid: string;
  /** `00000000:07:00.0`. */
  pciBusId: string;
  persistenceMode: boolean;
  mig: { current: boolean; pending: boolean };
  /** false where the hypervisor blocks GPU resets (VM passthrough): mode changes stay pending. */
  resetSupported: boolean;
  /**
   * Driver clients that are not in the process list but keep the GPU open (nvidia-persistenced,
   * dcgm, nvidia_drm, fabric manager). They block MIG mode changes and resets.
   */
  holders: string[];
  gis: SimGi[];
  processes: SimProcess[];
  telemetry: SimTelemetry;
  mps?: { active: boolean; doomed?: number[]; error?: number }; // owned by sim/workloads/mps.ts
  /** vGPU (`sim fault vgpu --name guest|host`): what `-q` shows as the virtualization mode. A
   * guest sees its vGPU type's framebuffer as the GPU's memory; `fbLeak` (`sim fault
   * vgpu-fb-leak`) lets its allocations pass that framebuffer into the physical card's. */
  virtualization?: {
    mode: "VGPU" | "Host VGPU";
    scheduler?: string;
    activeVgpus?: number;
    vgpuType?: string;
    framebufferMiB?: number;
    fbLeak?: boolean;
  };
  /** Fallen off the bus (`sim fault gpu-lost`): the driver can no longer reach it. */
  lost?: boolean;
  /** Uncorrectable ECC errors since the driver loaded (`sim fault ecc-uncorrectable`). */
  eccUncorrected?: number;
  /** Every NVLink of this GPU is down (`sim fault nvlink-down`): `nvlink -s` shows them
   * inactive, `topo -m` a PCIe path to its peers, NCCL falls back to host memory. */
  nvlinkDown?: boolean;
}

export interface SimState {
  version: 1;
  node: string;
  driver: string;
  /** `13.0`, or `N/A` as a vGPU host prints it. */
  cuda: string;
  /** The CUDA toolkit release of the node's nvcc (`sim fault nvcc --name X.Y`); absent: the
   * driver's own CUDA version (a node set up with the toolkit its driver runs). */
  nvcc?: string;
  /** `sim fault no-toolkit`: the NVIDIA Container Toolkit is not installed (nvidia-ctk and
   * nvidia-container-cli answer "not found"). */
  noToolkit?: boolean;
  gpus: SimGpu[];
  /**
   * What users other than root may do (GUIDE "nvidia-capabilities"): `mig/monitor` is
   * world-readable by default (listings work), `mig/config` is root-only (changes refused with
   * Insufficient Permissions). Absent: those defaults.
   */
  nonRootCaps?: { migMonitor: boolean; migConfig: boolean };
}

/** GPUs without MIG, so that a node can show nvidia-smi's refusal for them. */
export const NON_MIG_BOARDS: Readonly<
  Record<string, { smiName: string; pciId: string; powerCapW: number; memoryMiB: number }>
> = {
  L40S: { smiName: "NVIDIA L40S", pciId: "0x26B910DE", powerCapW: 350, memoryMiB: 46068 },
  T4: { smiName: "Tesla T4", pciId: "0x1EB810DE", powerCapW: 70, memoryMiB: 15360 },
};

/** The CUDA version nvidia-smi's banner shows for a driver branch (NVIDIA release notes). */
export function cudaForDriver(driver: string): string {
  const major = parseDriver(driver).major;
  const table: [number, string][] = [
    [580, "13.0"],
    [575, "12.9"],
    [570, "12.8"],
    [565, "12.7"],
    [560, "12.6"],
    [555, "12.5"],
    [550, "12.4"],
    [545, "12.3"],
    [535, "12.2"],
    [530, "12.1"],
    [525, "12.0"],
    [520, "11.8"],
    [515, "11.7"],
    [510, "11.6"],
    [495, "11.5"],
    [470, "11.4"],
    [465, "11.3"],
    [460, "11.2"],
    [455, "11.1"],
    [450, "11.0"],
  ];
  return table.find(([m]) => major >= m)?.[1] ?? "11.0";
}

// PCI buses of the eight GPUs of a DGX A100 / HGX board, then a plain sequence.
const BUSES = ["07", "0F", "47", "4E", "87", "90", "B7", "BD"];

function busId(index: number): string {
  const bus = BUSES[index] ?? (0x10 + index).toString(16).toUpperCase().padStart(2, "0");
  return `00000000:${bus}:00.0`;
}

export interface InitOptions {
  node: string;
  /** A product key, alias, nvidia-smi name or PCI id, or a NON_MIG_BOARDS key. */
  product: string;
  gpus: number;
  driver: string;
  cuda?: string;
  /** Start with MIG mode enabled (default: disabled, as a fresh driver install). */
  migEnabled?: boolean;
  /** Default true: nvidia-persistenced running, so no persistence warnings. */
  persistenceMode?: boolean;
}

export function newGpu(node: string, index: number, product: string): SimGpu {
  const nonMig = NON_MIG_BOARDS[product];
  const resolved = nonMig ? undefined : resolveBoard(product);
  if (!nonMig && !resolved) {
    throw new SlicecheckError("SIM_SPEC", `unknown GPU product '${product}'`, { product });
  }
  return {
    index,
    product: resolved ? resolved.product : product,
    board: resolved ? resolved.board.key : product,
    uuid: gpuUuid(node, index),
    pciBusId: busId(index),
    persistenceMode: true,
    mig: { current: false, pending: false },
    resetSupported: true,
    holders: [],
    gis: [],
    processes: [],
    telemetry: { fanPercent: null, tempC: 32, perf: "P0", powerDrawW: 62.5, gpuUtilPercent: 0 },
  };
}

export function initState(stateDir: string, opts: InitOptions): SimState {
  parseDriver(opts.driver);
  if (!Number.isInteger(opts.gpus) || opts.gpus < 1 || opts.gpus > 16) {
    throw new SlicecheckError("SIM_SPEC", `a node has 1-16 GPUs, got ${opts.gpus}`);
  }
  const gpus = Array.from({ length: opts.gpus }, (_, i) => {
    const g = newGpu(opts.node, i, opts.product);
    const mig = opts.migEnabled === true && !NON_MIG_BOARDS[g.product];
    return {
      ...g,
      mig: { current: mig, pending: mig },
      persistenceMode: opts.persistenceMode ?? true,
    };
  });
  const state: SimState = {
    version: 1,
    node: opts.node,
    driver: opts.driver,
    cuda: opts.cuda ?? cudaForDriver(opts.driver),
    gpus,
  };
  mkdirSync(stateDir, { recursive: true });
  writeState(stateDir, state);
  return state;
}

function invalid(file: string, why: string): SlicecheckError {
  return new SlicecheckError("SIM", `${file} is not a valid simulated GPU state: ${why}`, { file });
}

/** Cheap structural check: enough to refuse a hand-edited or foreign file with a clear error. */
function checkState(file: string, data: unknown): SimState {
  const s = data as Partial<SimState> | null;
  if (!s || typeof s !== "object") throw invalid(file, "not an object");
  if (s.version !== 1) throw invalid(file, `unsupported version ${String(s.version)}`);
  if (typeof s.driver !== "string" || typeof s.node !== "string") {
    throw invalid(file, "missing node or driver");
  }
  if (!Array.isArray(s.gpus)) throw invalid(file, "gpus is not a list");
  s.gpus.forEach((g, i) => {
    if (!g || typeof g.uuid !== "string" || !Array.isArray(g.gis) || !g.mig) {
      throw invalid(file, `gpus[${i}] lacks uuid, mig or gis`);
    }
  });
  return s as SimState;
}

function readStateText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new SlicecheckError("SIM", `no simulated GPU state at ${file}`, { file }, { cause: e });
  }
}

export function readState(stateDir: string): SimState {
  const file = join(stateDir, STATE_FILE);
  return parseState(file, readStateText(file));
}

/** The last state each file held, with its text. */
const lastRead = new Map<string, { text: string; state: SimState }>();

/**
 * The state for reading only: never change what this returns, other callers share it. Parsed
 * again only when the file's text changed (a read and compare costs 0.02 ms against 0.065 ms for
 * a read and parse of an 8-GPU state): every simulated program polls its node's state every
 * 50 ms, and in the resident simulator hundreds of them share one process.
 */
export function readStateShared(stateDir: string): SimState {
  const file = join(stateDir, STATE_FILE);
  const text = readStateText(file);
  const last = lastRead.get(file);
  if (last?.text === text) return last.state;
  const state = parseState(file, text);
  lastRead.set(file, { text, state });
  return state;
}

function parseState(file: string, text: string): SimState {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw invalid(file, (e as Error).message);
  }
  return checkState(file, data);
}

export function writeState(stateDir: string, state: SimState): void {
  const file = join(stateDir, STATE_FILE);
  const tmp = `${file}.${process.pid}.${Date.now()}.${Math.random().toString(16).slice(2)}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, file);
}

/**
 * Read, change and write the state under the lock. `fn` mutates the state it is given and
 * returns whether anything changed (nothing is written otherwise) plus its own result.
 */
export async function updateState<T>(
  stateDir: string,
  fn: (state: SimState) => { changed: boolean; result: T },
): Promise<T> {
  return withLock(stateDir, () => {
    const state = readState(stateDir);
    const { changed, result } = fn(state);
    if (changed) writeState(stateDir, state);
    return result;
  });
}

function isAmpere(g: SimGpu): boolean {
  const key = resolveProduct(g.product);
  return key !== undefined && productFacts(key).architecture === "ampere";
}

/**
 * What a node reboot does to the GPUs (mig-reference.md §7): GIs, CIs and processes are gone on
 * every generation; Ampere keeps the MIG mode in the InfoROM and applies a pending one; Hopper and
 * later come back with MIG disabled. Driver clients (`holders`) start again with the node.
 */
export function rebootState(state: SimState): void {
  for (const g of state.gpus) {
    g.gis = [];
    g.processes = [];
    const mode = isAmpere(g) ? g.mig.pending : false;
    g.mig = { current: mode, pending: mode };
  }
}

/**
 * A driver upgrade reloads the kernel modules, which has the same effect on MIG as a reboot
 * (Hopper loses the mode "when the modules are unloaded" [GUIDE]); the banner's CUDA version
 * follows the new driver.
 */
export function upgradeDriverState(state: SimState, driver: string): void {
  parseDriver(driver);
  state.driver = driver;
  state.cuda = cudaForDriver(driver);
  rebootState(state);
}
