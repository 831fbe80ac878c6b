// The event history of isolation scenarios, Jepsen-style: every step is an `invoke` followed by
// `ok` (it ran and ended as it should for a workload: exit 0), `fail` (it ended otherwise: died,
// killed, timed out; for an aggressor that is often the point) or `info` (the outcome is unknown:
// the harness lost the node; or a plain observation such as the kernel log). The verdicts read
// nothing but this history, so a report can be re-judged from history.jsonl alone.
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

export const FAULTS = ["oom", "crash", "kill", "hang", "noisy"] as const;
export type FaultName = (typeof FAULTS)[number];
/** What a scenario checks: a fault, the exclusivity of a whole-card instance, or (soft routes)
 * the slowdown per tenant count. */
export type ScenarioKind = FaultName | "exclusive" | "tenants";

/** The scenario being judged: its key, and its baseline's key (shared by the aggressor's faults). */
export interface ScenarioRef {
  scenario: string;
  baseline: string;
  fault: ScenarioKind;
  aggressor: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
}

export type EventType = "invoke" | "ok" | "fail" | "info";
/**
 * baseline: a victim's stress alone; load: a victim's stress while the aggressor faults;
 * fault: the aggressor's faulty workload; memcheck: a victim allocates memory after the
 * aggressor's OOM, in its own window after the victims' load window (never while they are
 * measured: it would share their instance); dmesg: the Xids the kernel log gained; recovery: the aggressor's stress after
 * its fault; exclusivity: what the driver lists on a whole-card instance's GPU while its
 * tenant runs; tenants: N stress processes sharing one soft-partitioned GPU (data.tenants = N);
 * utilization: the victims' SM activity and memory while under the fault; harness: the
 * controller itself (a lost connection). serve-baseline, serve, serve-fault: the latency
 * window of issue 22 item 3 (fault-scenario.ts): the victims' serve alone, then beside the
 * aggressor's fault struck once more.
 */
export type EventOp =
  | "baseline"
  | "load"
  | "fault"
  | "memcheck"
  | "dmesg"
  | "recovery"
  | "exclusivity"
  | "tenants"
  | "utilization"
  | "harness"
  // latency isolation (issue 22 item 3)
  | "serve-baseline"
  | "serve"
  | "serve-fault";

export interface XidSeen {
  xid: number;
  pci: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  pid: number | null;
  name: string | null;
  line: string;
}

export interface EventData {
  /** `node/<aggressor label>/<fault>`; baselines use `…/baseline`. */
  scenario: string;
  fault?: FaultName;
  /** exclusivity: `nvidia-smi mig -lgi` and `--query-compute-apps` on the GPU, as they came. */
  exclusivity?: {
    gpuUuid: string;
    lgiExit: number | null;
    lgi: string;
    appsExit: number | null;
    apps: string;
  };
  aggressor?: string;
  gpuInstanceId?: number | null;
  computeInstanceId?: number | null;
  args?: string[];
  exitCode?: number | null;
  signal?: string | null;
  timedOut?: boolean;
  /** Into its deadline on a starved node (workloads/completion.ts starvedAtDeadline): why. */
  starved?: string;
  /** Throughput over the run (stress). */
  tflops?: number;
  /** The stress's interval lines (`SLICECHECK stress t=… tflops=…`): repeated samples of one
   * window, so that a verdict can weigh a difference against the measurement's own spread. */
  samples?: { t: number; tflops: number }[];
  /** The seconds the workload was asked to run, and its interval between samples. */
  durationS?: number;
  intervalS?: number;
  /** It did not run its whole duration (a signal stopped it, its figures stop early): why. A
   * disturbance of the measurement, never evidence about isolation. */
  incomplete?: string;
  /** 1 for the first measurement of a scenario, 2 for the one re-measured before failing. */
  attempt?: number;
  /** The longest the controller's event loop was late during this step (ms): a stalled
   * control machine. */
  controllerStallMs?: number;
  errors?: number;
  /** memhog: its allocation stopped at an out-of-memory error. */
  oom?: boolean;
  /** memhog: the bytes it got (an MPS-capped tenant must stay within its cap). */
  allocatedBytes?: number;
  /** tenants: how many stress processes shared the GPU in this window. */
  tenants?: number;
  /** The process's start and end in seconds of the node's clock (its end record). */
  nodeSpan?: { startS: number; endS: number };
  /** utilization: the victims' SM activity (mean %) and memory in use (max MiB) while they were
   * measured under the fault; null where the source has no such figure. */
  utilization?: {
    source: string | null;
    victims: Record<
      string,
      { samples: number; smActiveMean: number | null; memUsedMaxMiB: number | null }
    >;
  };
  /** serve: p99 latency of each interval (`SLICECHECK serve`), and the run's final figures. */
  latencySamples?: { t: number; p50Ms: number; p99Ms: number }[];
  p50Ms?: number;
  p99Ms?: number;
  rps?: number;
  /** memhog --check results. */
  checks?: boolean[];
  /** CUDA error lines the workload printed (kind and the line). */
  cudaErrors?: { kind: string; message: string }[];
  /** The harness could not run or follow the workload: the result is unknown. */
  harnessError?: string;
  xids?: XidSeen[];
  /** The last lines of the workload's output, for evidence. */
  tail?: string[];
  /** A GPU reset was issued between the fault and the recovery (never, by this harness). */
  gpuReset?: boolean;
  note?: string;
}

export interface ChaosEvent {
  time: string;
  node: string;
  gpu: number;
  /** Instance label (`gpu0/gi1/ci0`), or `gpu0` for GPU-wide events. */
  instance: string;
  /** Who acted: `aggressor`, `victim` or `controller`. */
  process: "aggressor" | "victim" | "controller";
  op: EventOp;
  type: EventType;
  data: EventData;
}

/** An append-only history, written to a JSON-lines file as it grows. */
export class History {
  readonly events: ChaosEvent[] = [];
  constructor(private readonly file: string | null) {
    if (file) mkdirSync(dirname(file), { recursive: true });
  }
  add(e: Omit<ChaosEvent, "time"> & { time?: string }): ChaosEvent {
    const full: ChaosEvent = { ...e, time: e.time ?? new Date().toISOString() };
    this.events.push(full);
    if (this.file) appendFileSync(this.file, `${JSON.stringify(full)}\n`);
    return full;
  }
}

export function scenarioKey(node: string, aggressor: string, fault: string): string {
  return `${node}/${aggressor}/${fault}`;
}
