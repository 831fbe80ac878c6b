// The isolation scenarios of a node before they run: the modes, the plan (pure, so a suite can
// name its tests first), the references the verdicts judge, and the small helpers every runner
// shares (the controller's lag monitor, error text).
import { SlicecheckError } from "../errors.js";
import type { ContainerRuntime } from "../workloads/containers.js";
import type { Instance } from "../workloads/instances.js";
import { instanceLabel } from "../workloads/node-run.js";
import type { ChaosEvent, FaultName, History, ScenarioKind, ScenarioRef } from "./history.js";
import { scenarioKey } from "./history.js";
import type { Route } from "./routes.js";

/**
 * How a runner judges its scenarios, supplied by the caller (src/verdicts' `scenarioJudge`):
 * chaos runs scenarios and the verdicts layer below it judges them, yet the runner needs a
 * judgement mid-run (a spoiled baseline is taken again, a slowed victim re-measured). `V` is
 * the judge's verdict.
 */
export interface ScenarioJudge<V> {
  exclusivity(h: readonly ChaosEvent[], ref: ScenarioRef): V;
  baselineProblem(h: readonly ChaosEvent[], key: string, attempt: number): string | null;
  remeasureReason(h: readonly ChaosEvent[], ref: ScenarioRef, o: JudgeOptions): string | null;
  judgeRoute(route: Route, h: readonly ChaosEvent[], ref: ScenarioRef, o: JudgeOptions): V[];
}

/** What the judge is told (the verdicts' VerdictOptions). */
export interface JudgeOptions {
  /** Allowed relative throughput loss of a victim against its own baseline (0.05 = 5 %). */
  tolerance?: number;
}

export interface IsolationOptions<V> extends JudgeOptions {
  judge: ScenarioJudge<V>;
  runId: string;
  faults: readonly FaultName[];
  /** The faults whose victims' latency is measured too (a second strike while they serve);
   * DEFAULT_LATENCY_FAULTS when absent. */
  latencyFaults?: readonly FaultName[];
  durationS: number;
  /** At most this many aggressors per GPU (the first instances); all when absent. */
  aggressors?: number;
  outDir: string;
  history: History;
  signal?: AbortSignal;
  onProgress?: (line: string) => void;
  /** The node's instances, when the caller read them already. */
  inventory?: { instances: Instance[] };
  /** Each scenario's verdicts as soon as they are judged. */
  onScenario?: (r: ScenarioResult<V>, ref: ScenarioRef) => void;
  /** Soft routes: the tenant counts (2 to 7) whose per-tenant slowdown is measured; none when
   * empty or absent. */
  tenants?: readonly number[];
  /** issue 23: a MIG aggressor's fault runs in a container of this image (`containers:
   * {aggressor: IMAGE}`), through `runtime` (the inventory's; null: podman, else docker). */
  aggressorContainer?: { image: string; runtime: ContainerRuntime | null } | null;
}

/**
 * mig: the instances of a MIG GPU. time-slicing, mps and mps-limited: two processes on one GPU
 * without MIG (soft partitioning), plain, under MPS, and under MPS with each client's pinned
 * memory limit and active-thread percentage set (half the GPU each, as the k8s device plugin
 * sets them for two replicas). They are measured the same way and judged against their route's
 * own promise (routes.ts): what a soft route does not promise is characterised, not failed.
 * exclusive: a GPU whose MIG layout is one instance over the whole card (7g): one tenant, no
 * neighbour to fault; what it promises is that nothing else runs on the GPU.
 */
export type IsolationMode = "mig" | "time-slicing" | "mps" | "mps-limited" | "exclusive";

/** The route a mode runs its tenants on. */
export function routeOfMode(mode: IsolationMode, limits?: MpsLimits): Route {
  if (mode === "mig" || mode === "exclusive") return { kind: "mig" };
  if (mode === "time-slicing") return { kind: "time-slicing" };
  if (mode === "mps") return { kind: "mps", memLimitMiB: null, threadPct: null };
  return {
    kind: "mps",
    memLimitMiB: limits?.memLimitMiB ?? null,
    threadPct: limits?.threadPct ?? null,
  };
}

/** A soft route run inside a vGPU guest carries the guest's framebuffer: that memory is the
 * VM's own whatever shares it within the VM (routes.ts). */
function inGuest(r: Route, i: Instance): Route {
  return i.vgpuFramebufferMiB === undefined
    ? r
    : { ...r, vgpuFramebufferMiB: i.vgpuFramebufferMiB };
}

export interface MpsLimits {
  memLimitMiB: number;
  threadPct: number;
}

/** Half the GPU per client. A GPU whose memory is unknown gets 8 GiB: the cap is what is judged,
 * not how large it is. */
export function mpsLimitsFor(i: Instance): MpsLimits {
  return { memLimitMiB: Math.floor((i.memoryMiB ?? 16384) / 2), threadPct: 50 };
}

/** The environment that makes a process an MPS client with those limits (workloads.md 5.1). */
export function mpsEnv(l: MpsLimits): Record<string, string> {
  return {
    CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: `0=${l.memLimitMiB}M`,
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: String(l.threadPct),
  };
}

export interface ScenarioResult<V> {
  mode: IsolationMode;
  /** The route in words (routes.ts describeRoute). */
  route: string;
  node: string;
  gpu: number;
  aggressor: string;
  profile: string;
  fault: ScenarioKind;
  verdicts: V[];
}

export interface IsolationNodeResult<V> {
  node: string;
  results: ScenarioResult<V>[];
  /** The node could not be checked at all (unreachable, no GPU with two instances). */
  error: string | null;
}

/** The node or the harness was lost mid-scenario: the rest of the node is not run. */
export class HarnessLost extends Error {}

/**
 * How late this process's event loop runs: a timer every 100 ms, and each time it fires more
 * than 50 ms late, when and by how much. A stalled control machine (swapping, starved of CPU)
 * delays reading the nodes' output and the deadlines, so a victim can look slowed or hung for
 * reasons that have nothing to do with its GPU: the verdicts read this to say so.
 */
export class LagMonitor {
  private timer: NodeJS.Timeout | null = null;
  private last = Date.now();
  private readonly lags: { at: number; lateMs: number }[] = [];
  start(): void {
    if (this.timer) return;
    this.last = Date.now();
    this.timer = setInterval(() => {
      const now = Date.now();
      const late = now - this.last - 100;
      this.last = now;
      if (late > 50) this.lags.push({ at: now, lateMs: late });
      if (this.lags.length > 2000) this.lags.shift();
    }, 100);
    this.timer.unref();
  }
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
  /** The longest stall that overlapped [fromMs, toMs]. */
  maxBetween(fromMs: number, toMs: number): number {
    let worst = 0;
    for (const l of this.lags)
      if (l.at >= fromMs && l.at - l.lateMs <= toMs) worst = Math.max(worst, l.lateMs);
    return worst;
  }
}

export function exclusiveRef(node: string, label: string, a: Instance): ScenarioRef {
  return {
    scenario: scenarioKey(node, label, "exclusive"),
    baseline: scenarioKey(node, label, "exclusive"),
    fault: "exclusive",
    aggressor: label,
    gpuInstanceId: a.gpuInstanceId,
    computeInstanceId: a.computeInstanceId,
  };
}

export function errText(e: unknown): string {
  if (e instanceof SlicecheckError) return `[${e.code}] ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

export interface PlanEntry {
  mode: IsolationMode;
  gpu: number;
  aggressor: Instance;
  victims: Instance[];
  aggressorLabel: string;
  /** Soft partitioning runs two processes on one device: the victim's own label. */
  victimLabel: string | null;
  route: Route;
  /** mps-limited: the clients' limits (their environment). */
  limits?: MpsLimits;
}

/** The scenarios of a node, in the order they run: per GPU, each instance (the first
 * `aggressors`) faults once while the others are measured; a GPU without MIG is tried as
 * soft partitioning, plain (time-slicing), under MPS, and under MPS with limits. Pure, so a suite can name its tests
 * before anything runs. */
export function planScenarios(instances: readonly Instance[], aggressors?: number): PlanEntry[] {
  const byGpu = new Map<number, Instance[]>();
  for (const i of instances) byGpu.set(i.gpu, [...(byGpu.get(i.gpu) ?? []), i]);
  const plan: PlanEntry[] = [];
  for (const [gpu, list] of byGpu) {
    if (list.length >= 2 && list.every((i) => i.gpuInstanceId !== null)) {
      for (const a of list.slice(0, aggressors ?? list.length))
        plan.push({
          mode: "mig",
          gpu,
          aggressor: a,
          victims: list.filter((x) => x !== a),
          aggressorLabel: instanceLabel(a),
          victimLabel: null,
          route: routeOfMode("mig"),
        });
    } else if (list.length === 1 && list[0]!.gpuInstanceId !== null) {
      // One MIG instance on the GPU: checked for exclusivity, not skipped as "nothing to
      // partition" (a whole-card 7g layout is a real tenant layout).
      plan.push({
        mode: "exclusive",
        gpu,
        aggressor: list[0]!,
        victims: [],
        aggressorLabel: instanceLabel(list[0]!),
        victimLabel: null,
        route: routeOfMode("exclusive"),
      });
    } else if (list.length === 1 && list[0]!.gpuInstanceId === null) {
      for (const mode of ["time-slicing", "mps", "mps-limited"] as const) {
        const tag = { "time-slicing": "ts", mps: "mps", "mps-limited": "mpsl" }[mode];
        const limits = mode === "mps-limited" ? mpsLimitsFor(list[0]!) : undefined;
        plan.push({
          mode,
          gpu,
          aggressor: { ...list[0]! },
          victims: [{ ...list[0]! }],
          aggressorLabel: `gpu${gpu}/${tag}-a`,
          victimLabel: `gpu${gpu}/${tag}-b`,
          route: inGuest(routeOfMode(mode, limits), list[0]!),
          ...(limits ? { limits } : {}),
        });
      }
    }
  }
  return plan;
}
