// Types of the apply/assert/restore state machine. A node is read into a snapshot; each GPU gets
// a target (from a layout through the planner, or from a journal); a pure comparison turns
// snapshot and target into the commands that would converge them; the executor runs those
// commands one at a time and re-reads the GPU after them.

import type { Argv, GpuInstancePlacements, GpuInstanceProfile } from "../../nvsmi/index.js";
import type { PlanStep } from "../planner/index.js";

export interface CiState {
  id: number;
  profileId: number;
  profile: string;
  /** null on drivers whose `-lci` has no Placement column (R450). */
  start: number | null;
  size: number | null;
}

export interface GiState {
  id: number;
  profileId: number;
  profile: string;
  start: number;
  size: number;
  cis: CiState[];
}

export interface GpuProcess {
  pid: number;
  name: string;
  usedMiB: number | null;
}

/** One GPU's MIG mode and geometry: what a re-read after a change returns. */
export interface GpuMigState {
  migCurrent: boolean;
  migPending: boolean;
  gis: GiState[];
}

/** The `-lgip` and `-lgipp` rows of one GPU. */
export interface GpuListings {
  profiles: GpuInstanceProfile[];
  placements: GpuInstancePlacements[];
}

export interface GpuSnapshot extends GpuMigState {
  index: number;
  uuid: string;
  name: string;
  busId: string;
  /** `0x233010DE`, for device-filter matching; null where the driver does not print it. */
  pciDeviceId: string | null;
  /** false for GPUs without MIG (the mode reads `[N/A]`). */
  migCapable: boolean;
  /** `None`, `Pass-Through`, `VGPU`…; null when the driver does not say. */
  virtualization: string | null;
  /** A vGPU host GPU's active vGPUs (`nvidia-smi vgpu -q`), by name; null where none serve. */
  vgpuHost?: { active: number; names: string[] } | null;
  processes: GpuProcess[];
  /** null when the driver lists no profiles for this GPU (MIG off on most drivers). */
  listings: GpuListings | null;
}

export interface SlurmView {
  node: string;
  /** `IDLE+DRAIN` as scontrol prints it; null when it could not be read. */
  state: string | null;
  /** Why it could not be read. */
  problem: string | null;
  /**
   * Inside this process's own Slurm job on the node (a `--via slurm` task): whether that job
   * is the only one there and the reservation keeps the others off. `held` then stands in for
   * a drain (tenants are kept off the node); `why` says what is missing otherwise.
   */
  ownJob?: { jobId: string; held: boolean; why: string | null };
}

export interface NodeSnapshot {
  node: string;
  driver: string;
  gpus: GpuSnapshot[];
  /** Clients other than CUDA processes that block a mode change or a reset (node-wide). */
  holders: string[];
  /** Present when the inventory names the node's Slurm node. */
  slurm: SlurmView | null;
}

export interface TargetCi {
  profileId: number;
  profile: string;
}

export interface TargetGi {
  profileId: number;
  profile: string;
  /** Where it is planned (and created with `-cgi ID:start` where the driver takes it). */
  start: number;
  size: number;
  /**
   * The start is required: pinned by the layout's `placements`, or an original placement a
   * journal recorded. Otherwise any placement of the profile matches.
   */
  pinned: boolean;
  /** In creation order. */
  cis: TargetCi[];
}

export interface GpuTarget {
  gpu: number;
  migEnabled: boolean;
  gis: TargetGi[];
  /** The calls that build `gis` on an empty GPU, in order (the planner's steps). */
  steps: PlanStep[];
  /** For messages: `config 'x' entry 1`, `the journal`. */
  source: string;
  /** The target was planned from the live `-lgip`/`-lgipp`, not the built-in catalogue. */
  live: boolean;
  notes: string[];
}

/** What would converge one GPU on its target, worked out from a snapshot alone. */
export interface GpuChangePlan {
  gpu: number;
  /** What differs, in words (assert prints these). */
  drift: string[];
  /** `-mig 0|1` to run; null when the mode needs no command. */
  setMode: boolean | null;
  /** A change toward the target is pending already: only a GPU reset makes it effective. */
  resetPending: boolean;
  /** GIs whose CIs are destroyed (`-dci -gi …`), then the GIs destroyed (`-dgi -gi …`). */
  destroyCisOf: number[];
  destroyGis: number[];
  create: PlanStep[];
  /** Every change command, as `--dry-run` prints it (CI steps name their GI `<GI@start:size>`). */
  commands: Argv[];
}

export interface CommandRecord {
  argv: string[];
  exitCode: number | null;
  ms: number;
  /** What the node printed, kept for failures. */
  output: string;
}

export interface StepTimings {
  modeMs?: number;
  resetMs?: number;
  destroyMs?: number;
  createMs?: number;
  verifyMs?: number;
}

export type GpuStatus =
  | "unchanged"
  | "changed"
  | "would-change"
  | "not-in-layout"
  | "match"
  | "drift"
  | "failed"
  | "mismatch";

export interface GpuReport {
  index: number;
  name: string;
  status: GpuStatus;
  /** What differed before any change, in words (assert prints these). */
  drift: string[];
  /** What still differs after the changes: the driver did not do what it said. */
  remaining: string[];
  /** Planned change commands (dry run) or the ones that ran, with exit codes and times. */
  planned: string[][];
  commands: CommandRecord[];
  timings: StepTimings;
  /** After a change: what the re-read found, as `3g.40gb@4:4 (GI 2)`. */
  verified: string[];
  notes: string[];
  error: string | null;
}
