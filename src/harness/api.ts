// slicecheck/suite: what a suite file imports. Ordinary mocha files (`describe`, `it`) use it to
// reach the run's nodes, run built-in workloads on MIG instances, and record figures, evidence
// and measurements on the check a test makes. See docs/writing-suites.md.
//
// Everything here reads the run from globalThis, so it works whichever copy of this module a
// suite file resolves (a global install, the project's own node_modules, the source tree).
import { AssertionError } from "node:assert";
import {
  crossInstance,
  crossInstanceFailCode,
  crossInstanceRanks,
  multiGpu,
  p2pOfProfiles,
  type WholeCardFigure,
  wholeCardExpectation,
  wholeGpuRanks,
} from "../verdicts/comm.js";
import {
  allReduceOverNvlink,
  expectedNvlink,
  floorFor,
  nvlinkBetweenAll,
  nvlinkTopology,
} from "../verdicts/topology.js";
import type { Verdict } from "../verdicts/types.js";
import { type RanksScriptOptions, ranksScript, splitRanks } from "../workloads/ranks.js";
import type {
  CheckHandle,
  ExecAnswer,
  HarnessOptions,
  SuiteGpu,
  SuiteInstance,
  SuiteNode,
  SuiteRun,
  VerdictView,
} from "./api-types.js";
import { verdictView } from "./verdict-view.js";

export type * from "./api-types.js";

export const CONTEXT_KEY = Symbol.for("slicecheck.suite.context");
export const SCOPE_KEY = Symbol.for("slicecheck.suite.scope");

/** What the run installs on globalThis for the suite files it loads. */
export interface SuiteContext {
  harness(o?: HarnessOptions): SuiteRun;
  current(): CheckHandle;
}

export interface Scope {
  node?: string;
  gpu?: number;
  instance?: SuiteInstance;
}

function context(): SuiteContext {
  const c = (globalThis as Record<symbol, unknown>)[CONTEXT_KEY] as SuiteContext | undefined;
  if (!c)
    throw new Error(
      "slicecheck/suite: no slicecheck run is loading this file; run it with `slicecheck run --suites FILE`",
    );
  return c;
}

/** The run this suite file belongs to. Call it at the top of the file. */
export function harness(o?: HarnessOptions): SuiteRun {
  return context().harness(o);
}

/** The check the running test makes: figures, evidence, steps, measurements. */
export function current(): CheckHandle {
  return context().current();
}

type Describe = (title: string, fn: () => void) => { [SCOPE_KEY]?: Scope };

function describeWith(title: string, scope: Scope, fn: () => void): void {
  const d = (globalThis as unknown as { describe?: Describe }).describe;
  if (!d) throw new Error("slicecheck/suite: describe() is not defined: load the file with mocha");
  const suite = d(title, fn);
  suite[SCOPE_KEY] = scope;
}

/** A `describe` for one node: tests inside it are that node's checks. */
export function describeNode(node: SuiteNode, fn: () => void, title = node.name): void {
  describeWith(title, { node: node.name }, fn);
}

/** A `describe` for one GPU. */
export function describeGpu(gpu: SuiteGpu, fn: () => void, title = gpu.title): void {
  describeWith(title, { node: gpu.node, gpu: gpu.index }, fn);
}

/** A `describe` for one instance (its title by default: profile and placement, which survive
 * re-creation, unlike GI ids). */
export function describeInstance(inst: SuiteInstance, fn: () => void, title = inst.title): void {
  describeWith(title, { node: inst.node, gpu: inst.gpu, instance: inst }, fn);
}

/** A `describe` per node; tests inside it are that node's checks. */
export function forEachNode(nodes: readonly SuiteNode[], fn: (node: SuiteNode) => void): void {
  for (const n of nodes) describeWith(n.name, { node: n.name }, () => fn(n));
}

/** A `describe` per GPU of the node. */
export function forEachGpu(node: SuiteNode, fn: (gpu: SuiteGpu) => void): void {
  for (const g of node.gpus) describeWith(g.title, { node: node.name, gpu: g.index }, () => fn(g));
}

/** A `describe` per MIG instance (or the whole GPU where MIG is off). */
export function forEachInstance(gpu: SuiteGpu, fn: (instance: SuiteInstance) => void): void {
  for (const i of gpu.instances)
    describeWith(i.title, { node: gpu.node, gpu: gpu.index, instance: i }, () => fn(i));
}

const FAILED = Symbol.for("slicecheck.CheckFailed");

/** Fails the check (the node broke a promise): Allure `failed`, exit 1. `code` groups it in
 * the reports (ISOLATION_VIOLATION, LAYOUT_DRIFT…); the message carries the figures. */
export function fail(code: string, message: string): never {
  const e = new AssertionError({ message }) as AssertionError & { [FAILED]?: boolean };
  e[FAILED] = true;
  (e as unknown as { code: string }).code = code;
  throw e;
}

/** The harness could not decide (a disturbed measurement, a lost node): Allure `broken`,
 * exit 2, never a pass and never a failure of the node. */
export function broken(code: string, message: string): never {
  const e = new Error(message) as Error & { code: string; brokenCheck: true };
  e.code = code;
  e.brokenCheck = true;
  throw e;
}

/** The check was not assessed: what it judges cannot be observed here (confinement on a node
 * without a scheduler, where the harness is root and sees everything). A skipped check with its
 * reason, exit unchanged: never a pass, never a failure of the node. */
export function notAssessed(code: string, message: string): never {
  const e = new Error(message) as Error & { code: string; notAssessed: true };
  e.code = code;
  e.notAssessed = true;
  throw e;
}

// Slurm's answers parsed (scontrol -o, gres.conf, hostlists) and compared with MIG instances:
// what the built-in slurm suite uses, for site suites that check their own Slurm rules.
export * as slurm from "../verdicts/slurm.js";
// issue 23: containers per MIG instance (image choice, runtime argv, image CUDA, what a
// container saw), for the containers suite and site suites that start their own containers.
export * as containers from "../workloads/containers.js";
// enroot's steps (create, start, remove; the image's CUDA read inside), the same suite's.
export * as enroot from "../workloads/enroot.js";
// train-step's lines parsed and turned into measurements (issue 22): for a suite that runs it
// itself, as the training suite does across a node's whole GPUs in one process.
export * as trainStep from "../workloads/parsers/train-step.js";

/** A communication path's judgement as a suite reads it: a documented constraint passes. */
const viewOf = (v: Verdict, gpu: number | null, failCode: string): VerdictView =>
  verdictView(v, gpu, {
    failed: failCode,
    broken: "COMM_UNDECIDED",
    evidence: "output",
    markCharacterised: false,
  });

/** A two-rank all_reduce across two MIG instances of one GPU: refused as documented, or the
 * slow path with its bus bandwidth (a documented constraint, never a node failure). */
export function judgeCrossInstanceNccl(out: ExecAnswer, gpu: number): VerdictView {
  return viewOf(crossInstance(out), gpu, "NCCL_FAILED");
}

/** `all_reduce_perf -g N` over N whole GPUs: no wrong results, and its bus bandwidth. */
export function judgeMultiGpuAllReduce(out: ExecAnswer, gpus: number): VerdictView {
  return viewOf(multiGpu(out, gpus), null, "NCCL_FAILED");
}

/** Each profile's P2P capability from `nvidia-smi mig -lgip -i GPU`. */
export function judgeProfilesP2P(lgip: string, gpu: number): VerdictView {
  return viewOf(p2pOfProfiles(lgip, gpu), gpu, "NCCL_FAILED");
}

/** The shell script that starts one allreduce rank per device, all together, each seeing only
 * its own device (one rank per MIG instance, as jobs run NCCL on MIG). */
export function allreduceRanksScript(o: RanksScriptOptions): string {
  return ranksScript(o);
}

export type { WholeCardFigure } from "../verdicts/comm.js";

/** One rank per MIG instance of one GPU: host memory or network below the whole card passes (a
 * documented constraint); a claimed P2P path fails MIG_P2P_CLAIMED; wrong results NCCL_FAILED.
 * Without a measured whole-card figure, the product's expectation (from the GPU's name). */
export function judgeCrossInstanceRanks(
  out: ExecAnswer,
  ranks: number,
  gpu: { index: number; name: string },
  wholeCard: WholeCardFigure | null = wholeCardExpectation(gpu.name),
): VerdictView {
  const v = crossInstanceRanks(splitRanks(out.stdout), ranks, wholeCard);
  return viewOf(v, gpu.index, crossInstanceFailCode(v));
}

/** The same program with one rank per whole GPU: its busbw and transport. */
export function judgeWholeGpuRanks(out: ExecAnswer, ranks: number): VerdictView {
  return viewOf(wholeGpuRanks(splitRanks(out.stdout), ranks), null, "NCCL_FAILED");
}

/** `nvidia-smi topo -m` and `nvlink -s` (and `-e` where read) of a node's whole GPUs against
 * the links the catalogue says their board has: NVLINK_DOWN, NVLINK_SLOW, TOPOLOGY_NO_NVLINK. */
export function judgeNvlinkTopology(
  out: { topo: string; nvlinkStatus: string; nvlinkErrors?: string | null },
  gpus: readonly SuiteGpu[],
): VerdictView {
  const spec = expectedNvlink(gpus[0]?.name ?? "");
  const v = nvlinkTopology({ ...out, gpus: gpus.map((g) => g.index), spec });
  return viewOf(v, null, "NVLINK_DOWN");
}

/** `all_reduce_perf -g N` over whole GPUs run with NCCL_DEBUG=INFO: no wrong results, the bus
 * bandwidth at its largest size against the floor (BUSBW_BELOW_FLOOR: `busbw_floor` when
 * configured, else the catalogue default), and NVLink as the transport where `topo -m` says NV#
 * (NCCL_TRANSPORT_NOT_NVLINK). */
export function judgeAllReduceOverNvlink(
  out: ExecAnswer,
  gpus: readonly SuiteGpu[],
  topo: string | null,
  configuredFloorGBs: number | null = null,
): VerdictView {
  const idx = gpus.map((g) => g.index);
  const nvlinkInTopology = nvlinkBetweenAll(topo, idx);
  const floor = floorFor(expectedNvlink(gpus[0]?.name ?? ""), nvlinkInTopology, configuredFloorGBs);
  return viewOf(
    allReduceOverNvlink(out, gpus.length, { ...floor, nvlinkInTopology }),
    null,
    "NCCL_FAILED",
  );
}

/** Can an image of this CUDA run on the driver (the container toolkit's rule)? */
export { judgeImageCuda } from "../verdicts/cdi.js";
export type { RuntimeConfigVerdict } from "../verdicts/runtime-config.js";
/** Can the node's container runtime give a container a GPU (docker's nvidia runtime or CDI,
 * podman's CDI spec folders, containerd's CRI plugin)? RUNTIME_NOT_CONFIGURED with the fix. */
export { readRuntimeConfig } from "./runtime-config.js";
