// What `run --via slurm` is asked (ViaSlurmOptions) and what it saw of each node's task
// (ViaSlurmJob). Apart from via-slurm.ts because the gathering (via-slurm-gather.ts) reads them
// too, and via-slurm.ts calls it: one module each way would be a cycle.
import type { NodeSpec } from "../inventory/types.js";

export interface ViaSlurmOptions {
  runId: string;
  label: string | null;
  nodes: NodeSpec[];
  inventoryFile: string;
  /** Suite names, as a direct run's reports list them. */
  suites: string[];
  /** The run's own arguments, passed on to each node's task (suites, duration, layout, db…). */
  args: string[];
  /** --layout's file, if any: refused where jobs' devices are confined (via-slurm-devices.ts). */
  layout: string | null;
  outDir: string;
  partition: string | null;
  reservation: string | null;
  /** A task still pending this long after the release is cancelled (its node broken). */
  startTimeoutS: number;
  /** Each task's Slurm time limit (sbatch --time, rounded up to whole minutes); null: the
   * partition's. The controller waits on a running task as long as Slurm lets it run, so this
   * is what bounds a task whose slicecheck hangs on its node. */
  timeLimitS: number | null;
  /** A task Slurm keeps COMPLETING this long is taken as ended (via-slurm-watch.ts). */
  completingGraceS: number;
  allure: boolean;
  /** The slicecheck each task runs: this one (a shared file system, as HPC sites have). */
  command: string[];
  /** Aborted on SIGINT/SIGTERM: the array is cancelled and what the nodes wrote is gathered. */
  signal?: AbortSignal;
  progress(line: string): void;
}

export interface ViaSlurmJob {
  node: string;
  slurmNode: string;
  /** The GPU gres the task asked for (`gres:gpu:h100-80gb:2`): where devices are confined to
   * a job's gres; null: none. */
  gres: string | null;
  /** `<array id>_<task>`. */
  jobId: string;
  /** Every state the task was seen in, in order; the last is its end (COMPLETED…, ENDED when
   * Slurm had already forgotten it). */
  states: string[];
  /** The Slurm node it ran on, as squeue said while it ran. */
  ranOn: string | null;
  /** The last pending reason, or what the controller did to the task. */
  note: string | null;
  exitCode: number | null;
}
