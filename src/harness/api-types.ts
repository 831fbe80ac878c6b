// The types of the public suite API (`slicecheck/suite`). Interfaces only: the implementation
// lives on the run (src/harness/context.ts) and reaches suite files through globalThis, so a
// suite that resolves another copy of slicecheck still talks to the run that loaded it.
import type { PassKind, VerdictStatus } from "../util/status.js";
import type { CheckRecord, CheckStatus } from "../verdicts/checks.js";
import type { Instance } from "../workloads/instances.js";

export type { PassKind } from "../util/status.js";

export interface ExecAnswer {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

export interface SuiteExecOptions {
  /** Seconds before the command is killed on the node (default 120). */
  timeoutS?: number;
  env?: Record<string, string>;
  /** Through `sudo -n` where the inventory says `become: sudo`. */
  privileged?: boolean;
}

/** A MIG instance (or a whole GPU where MIG is off), as the run discovered it. */
export interface SuiteInstance extends Instance {
  /** `gpu0/gi1/ci0` in this run (GI ids change when a layout is re-created). */
  label: string;
  /** What identifies the instance across runs: `3g.40gb at 0:4`. */
  title: string;
}

export interface SuiteGpu {
  node: string;
  index: number;
  name: string;
  uuid: string;
  migEnabled: boolean;
  instances: SuiteInstance[];
  /** `GPU 0 (NVIDIA H100 80GB HBM3)`. */
  title: string;
  /** The GPU fell off the bus before the run (nvidia-smi cannot reach it): its bus id and the
   * driver's words. It has no instances; the health suite fails it `GPU_LOST`. */
  lost?: { pciBusId: string; line: string } | null;
}

export interface SuiteNode {
  name: string;
  driver: string | null;
  cuda: string | null;
  gpus: SuiteGpu[];
  instances: SuiteInstance[];
  /** The node's name in Slurm (the inventory's `slurm_node`), or null where Slurm is not used. */
  slurmNode: string | null;
  /** issue 23: the inventory's `containers:` images and `container_runtime` for this node. */
  containers?: { images: Record<string, string>; runtime: "docker" | "podman" | "enroot" | null };
  /** Why the node could not be read (unreachable, locked…): its tests are broken. */
  error: string | null;
  /** Why this suite may not fault the node (a foreign process, Slurm not drained), if it
   * declared that it injects faults. */
  refusal: string | null;
  exec(command: readonly string[] | { shell: string }, o?: SuiteExecOptions): Promise<ExecAnswer>;
}

export interface WorkloadMeasurement {
  metric: string;
  value: number;
  unit: string;
}

export interface WorkloadResult {
  instance: SuiteInstance;
  workload: string;
  /** passed: ran its whole duration without error; failed: died or reported errors; broken:
   * the harness could not run or follow it. */
  status: VerdictStatus;
  reason: string | null;
  exitCode: number | null;
  measurements: WorkloadMeasurement[];
  /** Metric name → value, for quick reading. */
  metrics: Record<string, number>;
  log: string;
  startMs: number;
  stopMs: number;
  /** Its start and end in seconds of the node's clock (the node's record); null: none came. */
  nodeSpan?: { startS: number; endS: number } | null;
  /** stress: SM activity and memory in use sampled while it ran (metrics sm_active_mean,
   * sm_active_max, memory_used_max, utilization_samples); null where nothing was sampled. */
  utilization: {
    source: string | null;
    samples: number;
    problem: string | null;
    /** Why this instance's figures are not a measurement (too few samples, a peak below what
     * the workload holds); null when they are one. */
    insufficient: string | null;
  } | null;
}

/** train-step: GEMMs plus an NCCL all_reduce per step (issue 22), the training suite's. */
export type BuiltinWorkload = "stress" | "nccl" | "gpu-burn" | "train-step" | "serve";

/** An instance's argv around a workload's program and arguments (a container runtime's). */
export type WorkloadWrap = (
  instance: SuiteInstance,
  program: string,
  args: readonly string[],
) => string[];

export interface WorkloadBatch {
  /** Starts the workload on every instance at once (nodes in parallel); idempotent. */
  start(): void;
  /** The instance's result (starts the batch if it was not). */
  result(instance: SuiteInstance): Promise<WorkloadResult>;
}

/** A judgement made by one of the built-in engines (health, layout, regression, isolation). */
export interface VerdictView {
  title: string;
  gpu: number | null;
  status: VerdictStatus;
  /** A passed judgement's kind: measured, or a characterisation / documented constraint (pass
   * it on with `current().passKind(v.kind)`); null when it did not pass. */
  kind: PassKind | null;
  code: string;
  message: string;
  figures: Record<string, number | string | boolean | null>;
  evidence: { name: string; content: string }[];
}

export interface ScenarioView {
  gpu: number;
  /** mig, exclusive; time-slicing, mps and mps-limited where MIG is off (soft partitioning). */
  mode: string;
  /** The route the scenario's tenants run on, in words (`MIG`, `MPS (pinned memory limit …)`). */
  route: string;
  aggressor: { label: string; profile: string; placement: string | null; title: string };
  fault: string;
  /** The verdicts it yields: victimsUnaffected, faultContained, xidAttributed, recovered (and
   * memoryIsolated under MPS with limits); slowdownPerTenants for `tenants`. */
  verdictNames: string[];
  /** Resolves when the scenario ran (every scenario of the node is run in order). */
  result(): Promise<ScenarioOutcome>;
}

export interface ScenarioOutcome {
  verdicts: VerdictView[];
  startMs: number;
  stopMs: number;
  /** Each step with its own outcome, and the verdicts that judge it (a failed verdict fails
   * the step it judges: see suites/lib/judge.ts stepsAsJudged). */
  steps: {
    name: string;
    status: CheckStatus;
    startMs: number;
    stopMs: number;
    judgedBy?: string[];
  }[];
}

export interface IsolationPlan {
  /** Starts the node's scenarios (idempotent): once a slot of `--concurrency` is free, nodes
   * side by side, one scenario at a time on a node (one aggressor at a time per GPU). A
   * scenario's result or a route asked for first starts it too. */
  start(): void;
  scenarios: ScenarioView[];
  /** Why nothing can be planned (no GPU with two instances, or the node is refused). */
  problem: string | null;
  /** Each GPU's route as found on the node before any scenario ran (`-q`, `vgpu -q`, the MPS
   * control pipe, the compute processes); null for a GPU it could not be read for. */
  route(gpu: number): Promise<{ route: string; kind: string; promises: string } | null>;
}

export interface RunOptionsView {
  runId: string;
  durationS: number;
  /** Allowed relative loss, as a fraction (0.05 = 5 %). */
  tolerance: number;
  faults: string[];
  aggressors: number | null;
  /** nccl: the configured all_reduce floor across whole GPUs, GB/s; null: the catalogue's. */
  busbwFloorGBs?: number | null;
  /** Soft routes: the tenant counts whose per-tenant slowdown is measured (`--tenants`). */
  tenants: number[];
  /** containers: the config file's images, profile (`1g.10gb`) or `gpuN:START:SIZE` → image
   * (a node's inventory `containers:` wins key by key: SuiteNode.containers). */
  containers?: Record<string, string>;
  layout: { file: string; config: string } | null;
  outDir: string;
}

export interface SuiteRun {
  readonly options: RunOptionsView;
  readonly nodes: SuiteNode[];
  /** A built-in workload on these instances (default: every instance of every node). */
  workload(
    name: BuiltinWorkload,
    o?: {
      durationS?: number;
      instances?: readonly SuiteInstance[];
      /** The argv that runs the workload's program on an instance instead of the program
       * itself (issue 23: inside the instance's container); its output is read the same. */
      wrap?: WorkloadWrap;
    },
  ): WorkloadBatch;
  /** Checks finished so far in this run (earlier suites' included). */
  checks(): readonly CheckRecord[];
  /** The built-in isolation scenarios for a node (refused nodes plan nothing). Started nodes
   * run side by side, at most `--concurrency` at once: start every node's plan in the suite's
   * own `before`, not in each node's (mocha runs those one after another). */
  isolation(node: SuiteNode): IsolationPlan;
  /** `fn` for every node, started together (at most `--concurrency` at once) by `start()` or
   * the first `result(node)`: per-node work side by side, each node's tests awaiting its own. */
  eachNode<T>(fn: (node: SuiteNode) => Promise<T>): {
    start(): void;
    result(node: SuiteNode): Promise<T>;
  };
  /** The node's health at this moment against its state at the run's start, per GPU. */
  health(node: SuiteNode): Promise<VerdictView[]>;
  /** The run's --layout asserted on the node, per GPU; null without --layout. */
  layout(node: SuiteNode): Promise<VerdictView[] | null>;
  /** This run's measurements against the latest run of the same nodes on another driver. */
  regressions(): Promise<VerdictView[]>;
  /**
   * The run's own Slurm jobs on a node (the slurm suite's probes). `open()` gives the
   * reservation to submit into: where this run drained the node (`--drain`), a maintenance
   * reservation of the run's own, the node resumed under it (nobody else's job starts there);
   * else the run's `--reservation`, else null. `close()` drains the node again; the run closes
   * whatever is left open before it resumes its nodes.
   */
  slurmJobs(node: SuiteNode): {
    open(): Promise<{ reservation: string | null; opened: boolean }>;
    close(): Promise<void>;
  };
  /** A built-in workload's program on the node (on its PATH, else built there with its nvcc,
   * once per run): for a command the suite starts itself, such as inside a Slurm job. */
  program(
    node: SuiteNode,
    name: "stress" | "memhog" | "crasher" | "allreduce" | "train-step" | "serve",
  ): Promise<string>;
}

/** What a suite declares it needs, at the top of its file (`harness({ … })`). The run reads
 * every suite's declaration before it touches a node (the file is loaded once without nodes
 * for that), and prepares only what is declared. All optional: `harness()` needs nothing. */
export interface HarnessOptions {
  /** The suite injects faults or otherwise disturbs tenants: the interlocks guard it. */
  injectsFaults?: boolean;
  /** It judges the kernel log: the run reads each node's log at its start, to compare. */
  readsKernelLog?: boolean;
  /** It checks the layout the run applies: the run refuses to start without `--layout`. */
  needsLayout?: boolean;
  /** It runs workloads for the run's `--duration` (the progress estimate before it loads). */
  runsWorkloads?: boolean;
  /** A failed check of it makes the node unfit for tenants: `--report-to-slurm` leaves that
   * node drained, with the check in the reason. */
  unfitOnFailure?: boolean;
  /** Its Allure labels (default: epic "Site checks", feature the suite's name, severity normal). */
  labels?: { epic?: string; feature?: string; severity?: string };
}

export interface CheckHandle {
  /** Figures of the check (shown in every report, recorded in the database). */
  figures(f: Record<string, number | string | boolean | null>): void;
  /** Evidence: text inline, or a file the run wrote. */
  evidence(name: string, content: string, contentType?: string): void;
  evidenceFile(name: string, path: string, contentType?: string): void;
  /** A measurement of an instance, recorded with the run (what `diff` compares). */
  measure(instance: SuiteInstance, metric: string, value: number, unit: string): void;
  /** A live step: timed while `fn` runs, failed or broken with what it throws. */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  /** A step already timed (work that ran concurrently with other checks). */
  phase(name: string, startMs: number, stopMs: number, status?: CheckStatus): void;
  /** The time span of the work this check judges, when it ran before or beside the test. */
  window(startMs: number, stopMs: number): void;
  parameter(name: string, value: string): void;
  /** What the check found, shown when it passes too ("Xid 31 names the aggressor"). A failed
   * or broken check's message is its error's. */
  note(text: string): void;
  /** The code a passing check records instead of OK. CHARACTERISED and DOCUMENTED_CONSTRAINT
   * also set the kind (passKind); ignored when the check fails. */
  passCode(code: string): void;
  /** What kind of pass this check is when it passes: `characterised` for a soft route's
   * expected weakness, measured, or `documented-constraint` for a limit the platform documents
   * (neither verifies isolation; the sign-off counts them apart); default `measured`. The
   * record gets the kind and its code (CHARACTERISED, DOCUMENTED_CONSTRAINT). Ignored when the
   * check fails. */
  passKind(kind: PassKind): void;
}
