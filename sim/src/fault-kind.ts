// What a fault kind of the simulated node is (`sim fault NODE KIND`): how it is planted, what it
// records so that `--clear` undoes exactly it, and the helpers the kinds share.
import { SlicecheckError } from "../../src/errors.js";
import type { SimGpu, SimState } from "./nvsmi/state.js";
import type { SacctRow } from "./slurm/sacct.js";
import type { SlurmNode } from "./slurm/state.js";

export interface FaultOptions {
  gpu?: number;
  /** holder: which client; vgpu: guest or host; nvcc: the toolkit release; sacct: the history. */
  name?: string;
  /** slurm: one of SLURM_STATES' keys. */
  state?: string;
  /** serve-slow: the GPU instance (GI id) it reaches; omitted: every instance of the GPU. */
  instance?: number;
}

/** What a planted fault changed, with what `--clear` needs to put back. */
export type FaultRecord =
  | { kind: "foreign-process" | "tenant"; gpu: number; pid: number }
  | { kind: "holder"; gpu: number; name: string }
  | { kind: "slurm"; node: string; previous: SlurmNode | null }
  | { kind: "sacct"; previous: SacctRow[] | null }
  | { kind: "no-reset"; gpu: number; previous: boolean }
  | { kind: "gpu-lost"; gpu: number }
  | { kind: "nvlink-down"; gpu: number }
  | { kind: "ecc-uncorrectable"; gpu: number; previous: number }
  | { kind: "vgpu" | "vgpu-fb-leak"; gpu: number; previous?: SimGpu["virtualization"] | null }
  | { kind: "nvcc"; previous: string | null }
  | { kind: "no-toolkit" }
  | { kind: "cdi-stale"; file: string; previous: string | null }
  // issue 23: the container toolkit's (sim/src/containers), kept in containers.json.
  | { kind: "image"; name: string; previous: string | null; previousCompat?: string }
  | { kind: "container-sees-all" }
  | { kind: "no-runtime"; name: string }
  | { kind: "runtime-unconfigured" }
  | { kind: ChaosKind };

/** Isolation faults, read by the simulated workloads (sim/src/workloads/chaos.ts). */
export type ChaosKind =
  | "isolation-broken"
  | "xid-misattributed"
  | "hang"
  | "drop-connection"
  | "mps-cap-ignored"
  | "mig-p2p-claimed"
  | "wrong-gradient"
  | "serve-slow";

export interface PlantedFault {
  record: FaultRecord;
  /** In words, for the command's output. */
  detail: string;
  /** Kernel log lines to append once the state lock is released (the log takes it too). */
  klog?: { gpu: SimGpu; lines: string[] };
}

export interface Ctx {
  state: SimState;
  stateDir: string;
}

export interface FaultKind {
  usage: string;
  plant(ctx: Ctx, o: FaultOptions): PlantedFault;
  undo(ctx: Ctx, record: FaultRecord): void;
}

export function usage(message: string): SlicecheckError {
  return new SlicecheckError("USAGE", message);
}

export function gpuOf(state: SimState, o: FaultOptions): SimGpu {
  const index = o.gpu ?? 0;
  const gpu = state.gpus.find((g) => g.index === index);
  if (!gpu) {
    throw usage(
      `node ${state.node} has no GPU ${index}; it has GPUs 0-${state.gpus.length - 1} (--gpu N)`,
    );
  }
  return gpu;
}

export function gpuOfRecord(state: SimState, gpu: number): SimGpu | undefined {
  return state.gpus.find((g) => g.index === gpu);
}
