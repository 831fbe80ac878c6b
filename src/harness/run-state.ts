// The one state a run's tasks share (run-tasks.ts, list-tasks.ts), and the run's options and
// result. Each task reads what earlier tasks left here and adds its own part.

import type { FaultName } from "../chaos/history.js";
import type { NodeSpec } from "../inventory/types.js";
import type { LayoutConfig } from "../mig/layout/index.js";
import type { Recorder } from "../store/recorder.js";
import type { CheckRecord, CheckSink } from "../verdicts/checks.js";
import type { SignoffPolicy } from "../verdicts/coverage.js";
import type { RunOptionsView } from "./api-types.js";
import type { PreCheck } from "./mocha-run.js";
import type { ProgressEvent, RunProgress } from "./progress.js";
import type { NodeSession } from "./session.js";
import type { SlurmJobWindows } from "./slurm-drain.js";
import type { Span } from "./spans.js";
import type { SuiteFile } from "./suites.js";
import type { TaskList } from "./tasks.js";

export interface HarnessRunOptions {
  runId: string;
  nodes: NodeSpec[];
  inventoryFile: string;
  suites: SuiteFile[];
  outDir: string;
  durationS: number;
  tolerance: number;
  faults: FaultName[];
  /** isolation: the faults whose victims' latency is measured too (--latency-faults); the
   * default set when absent. */
  latencyFaults?: FaultName[];
  aggressors: number | null;
  /** nccl: the all_reduce floor across whole GPUs, GB/s (`--busbw-floor`); null: default. */
  busbwFloorGBs?: number | null;
  /** Soft routes: tenant counts for the slowdown per tenant count (`--tenants`). */
  tenants: number[];
  /** issue 23: the config file's `containers:` images (profile or gpuN:START:SIZE → image). */
  containers?: Record<string, string> | null;
  layout: { file: string; config: LayoutConfig } | null;
  keep: boolean;
  allowReset: boolean;
  /** `--regenerate-cdi`: `nvidia-ctk cdi generate` after the layout's apply and restore. */
  regenerateCdi?: boolean;
  /** `--lease`: the node lease's length in seconds (default DEFAULT_LEASE_S). */
  leaseS?: number;
  /** `--drain`: Slurm nodes drained before anything is touched (slurm-drain.ts). */
  drain?: {
    timeoutS: number;
    reportToSlurm: boolean;
    /** Set by a rollout: resume only nodes whose every check passed. */
    resumeOnlyOnPass?: boolean;
    /** The rollout's id, in the drain reasons (slurm-drain.ts `owner`). */
    owner?: string;
  } | null;
  /** `--reservation R`: where the run's own Slurm jobs (the slurm suite's probes) go. */
  reservation?: string | null;
  journalDir: string;
  db: string;
  /** --db-timeout: the bound on every wait for the records database. */
  dbTimeoutMs?: number;
  label: string | null;
  argv: string[];
  grep?: string;
  bail?: boolean;
  list?: boolean;
  allure: boolean;
  concurrency: number;
  /** The sign-off policy the compliance page judges this run by (run.json `scope`). */
  signoffPolicy?: SignoffPolicy;
  /** Each node's planned steps and phase changes, for the terminal (src/harness/progress.ts). */
  events?(e: ProgressEvent): void;
  onCheck?(c: CheckRecord): void;
  /** Messages for the person running it (stderr). */
  err(line: string): void;
  /** After a second interrupt (tests replace process.exit). */
  exit?(code: number): void;
}

export interface HarnessRunResult {
  runId: string;
  exitCode: number;
  interrupted: boolean;
  checks: CheckRecord[];
  nodes: {
    node: string;
    driver: string | null;
    cuda: string | null;
    error: string | null;
    connections: number;
    /** Why each connection after the first was opened. */
    extraConnections: string[];
    tookOver: string | null;
  }[];
  listed?: { suite: string; path: string[]; title: string }[];
  outDir: string;
  /** Where the run's time went (spans.ts): each task, teardown and end step, in ms since the
   * process started; what lies before the first is start-up, after the last the exit. */
  tasks?: Span[];
}

export type Listed = NonNullable<HarnessRunResult["listed"]>;

export interface RunState {
  readonly o: HarnessRunOptions;
  /** The run's suites with what each declared (suite-declare.ts). */
  readonly suites: SuiteFile[];
  readonly startedMs: number;
  readonly view: RunOptionsView;
  readonly tasks: TaskList;
  readonly sink: CheckSink;
  readonly progress: RunProgress;
  recorder: Recorder | null;
  readonly sessions: NodeSession[];
  /** Checks the harness decides before the suites run; they go through the mocha run (so every
   * report has them), or straight to the sink if the run never gets there. */
  readonly pre: PreCheck[];
  /** `-i INV --nodes …`, for the commands printed to finish by hand. */
  readonly where: string;
  readonly slurmWindows: SlurmJobWindows;
  /** Each node's kernel log at the start, where a suite reads the kernel log. */
  dmesgAtStart: Map<string, string[] | null>;
  /** Per node: why a fault-injecting suite may not touch it (interlocks), or null. */
  readonly refusals: Map<string, string | null>;
  listed?: Listed;
  /** The tests the run selected over all nodes (after --grep); null until the suites load. */
  selected: number | null;
}

export const nodeOf = (s: NodeSession): string => s.node.name;

/** The sessions still usable: connected, discovered, not refused. */
export function live(st: RunState): NodeSession[] {
  return st.sessions.filter((s) => !s.error);
}

/** The view of the run's options that suites get (`run.options`). */
export function optionsView(o: HarnessRunOptions): RunOptionsView {
  return {
    runId: o.runId,
    durationS: o.durationS,
    tolerance: o.tolerance,
    faults: o.faults,
    aggressors: o.aggressors,
    busbwFloorGBs: o.busbwFloorGBs ?? null,
    tenants: o.tenants,
    containers: o.containers ?? {},
    layout: o.layout ? { file: o.layout.file, config: o.layout.config.name } : null,
    outDir: o.outDir,
  };
}
