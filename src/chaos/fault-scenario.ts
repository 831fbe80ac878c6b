// One fault scenario of a partitioned GPU (scenario.ts runs them in their order): the
// aggressor's fault beside the victims' measured load (and, for an OOM, a memory check in the
// victims' own instances), the kernel log read around it, then the aggressor's recovery. Apart
// from NodeScenarios so that its file stays a readable size; what it needs of the node comes in
// `d`, as exclusive.ts does.
import { randomBytes } from "node:crypto";
import type { StartGate, Supervisor, Transport } from "../transport/types.js";
import { type ContainerRuntime, containerizedSpec } from "../workloads/containers.js";
import type { Instance } from "../workloads/instances.js";
import { type InstanceOutcome, openSupervisor } from "../workloads/launcher.js";
import { serveSpec, stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import { type UtilizationResult, UtilizationSampler } from "../workloads/utilization.js";
import { aggressorGraceS, aggressorSpec, memcheckSpec, victimGraceS } from "./faults.js";
import type { ChaosEvent, EventData, EventOp, FaultName, ScenarioRef } from "./history.js";
import { errText, HarnessLost, type PlanEntry } from "./plan.js";
import { xidsIn } from "./probes.js";

/** How a scenario step runs its processes (NodeScenarios.step). */
export interface StepExtra {
  graceS: number;
  onLine?: (i: Instance, l: string) => void;
  transports?: Transport[];
  attempt?: number;
  tenants?: number;
  /** Start the processes together on the node, waiting at most this many seconds. */
  startTogetherS?: number;
  /** A start gate shared with another step's processes. */
  gate?: StartGate;
  /** The node's supervisor shared with that other step: one login for both. */
  supervisor?: Supervisor | null;
}

export interface FaultDeps {
  durationS: number;
  /** The victims' latency is measured too: the fault strikes again while they serve. */
  latency: boolean;
  transports: Transport[];
  step: (
    insts: Instance[],
    spec: WorkloadSpec,
    op: EventOp,
    process: ChaosEvent["process"],
    scenario: string,
    extra: StepExtra,
  ) => Promise<InstanceOutcome[]>;
  /** A controller event of the GPU. */
  event: (gpu: number, op: EventOp, type: ChaosEvent["type"], data: EventData) => void;
  dmesgLines: () => Promise<string[]>;
  /** Records the victims' utilization under the fault. */
  utilization: (scenario: string, u: UtilizationResult) => void;
  /** The aggressor's fault in a container of this image (IsolationOptions.aggressorContainer). */
  aggressorContainer?: { image: string; runtime: ContainerRuntime | null } | null;
}

/** The aggressor's fault workload: in its container where one is asked for and the GPU is
 * MIG-partitioned (a soft route's tenant shares the GPU, and an MPS client needs the daemon's
 * pipe: those stay bare). The fault itself is the same program with the same arguments, so
 * the verdicts read it as they read the bare one. */
function faultSpecOf(p: PlanEntry, fault: FaultName, d: FaultDeps): WorkloadSpec {
  const spec = aggressorSpec(fault, d.durationS);
  const c = d.aggressorContainer;
  return c && p.mode === "mig" ? containerizedSpec(spec, p.aggressor, c.image, c.runtime) : spec;
}

/** How long the first of the aggressor and its victims waits for the others on the node. */
const FAULT_GATE_S = 15;

/** The aggressor and the victims start together on the node: a victim whose stress starts late
 * (a loaded controller opens its channels slowly) would miss a crash that strikes at 30 % of the
 * duration. fault-timing.ts judges from the node's records whether it still did. */
const togetherGate = (fault: FaultName, count: number): StartGate | undefined =>
  // Not for a hang: its aggressor is killed at its own deadline, which a gate's wait would move.
  fault === "hang"
    ? undefined
    : { key: randomBytes(8).toString("hex"), count, waitS: FAULT_GATE_S };

/** The gate of an aggressor and its victims, and the node supervisor their steps share (one
 * login for both; the caller closes it). */
async function startTogether(
  fault: FaultName,
  count: number,
  d: FaultDeps,
): Promise<{ gate?: StartGate; supervisor: Supervisor | null }> {
  const gate = togetherGate(fault, count);
  return { gate, supervisor: gate ? await openSupervisor(d.transports[0]!) : null };
}

/** The victims' SM activity and memory in use while they are measured under the fault, started:
 * through their supervisor when they share one (no login per reading). */
function victimSampler(p: PlanEntry, d: FaultDeps, sup: Supervisor | null): UtilizationSampler {
  const interval = Math.max(500, d.durationS * 100);
  const sampler = new UtilizationSampler(d.transports[0]!, p.victims, interval, sup);
  sampler.start();
  return sampler;
}

export async function faultScenario(
  p: PlanEntry,
  fault: FaultName,
  ref: ScenarioRef,
  bus: string | null,
  attempt: number,
  d: FaultDeps,
): Promise<void> {
  const D = d.durationS;
  const before = await d.dmesgLines().catch((e: unknown) => {
    throw new HarnessLost(errText(e));
  });
  // The aggressor and the memory check go over other connections than the victims' stress
  // when there are several, so that neither waits for a channel behind the stress.
  const rest = d.transports.length > 1 ? d.transports.slice(1) : d.transports;
  const shared = await startTogether(fault, p.victims.length + 1, d);
  let sawOom: () => void = () => {};
  const oomSeen = new Promise<void>((r) => {
    sawOom = r;
  });
  const aggressor = d
    .step([p.aggressor], faultSpecOf(p, fault, d), "fault", "aggressor", ref.scenario, {
      graceS: aggressorGraceS(fault),
      transports: rest,
      attempt,
      ...shared,
      onLine: (_i, l) => {
        if (/memhog allocated_bytes=\d+ requested_bytes=\d+ oom=1/.test(l)) sawOom();
      },
    })
    .finally(() => sawOom());
  const sampler = victimSampler(p, d, shared.supervisor);
  const load = d
    .step(p.victims, stressSpec(D), "load", "victim", ref.scenario, {
      graceS: victimGraceS(D),
      attempt,
      ...shared,
    })
    .finally(() => sampler.stop());
  // The memory check runs in the victims' own instances, so it gets its own window after
  // their load window: a memhog beside a victim's stress would share its compute unit and
  // read as a slowdown. The aggressor's OOM holds its memory on through this window.
  const memcheck =
    fault === "oom"
      ? load.then(async () => {
          await oomSeen;
          return d.step(p.victims, memcheckSpec(), "memcheck", "victim", ref.scenario, {
            graceS: 10,
            transports: rest,
            attempt,
          });
        })
      : Promise.resolve([]);
  const settled = await Promise.allSettled([aggressor, load, memcheck]);
  await shared.supervisor?.close();
  const lost = settled.find((s) => s.status === "rejected");
  if (lost) throw (lost as PromiseRejectedResult).reason;
  d.utilization(ref.scenario, await sampler.stop());

  const tag = attempt > 1 ? { attempt } : {};
  d.event(p.gpu, "dmesg", "invoke", { scenario: ref.scenario, ...tag });
  const after = await d.dmesgLines().catch((e: unknown) => {
    throw new HarnessLost(errText(e));
  });
  const xids = xidsIn(after.slice(before.length), bus);
  d.event(p.gpu, "dmesg", "ok", { scenario: ref.scenario, xids, ...tag });

  if (d.latency) await latencyWindow(p, fault, ref, attempt, d);

  await d.step(
    [p.aggressor],
    stressSpec(Math.max(1, D / 2)),
    "recovery",
    "aggressor",
    ref.scenario,
    { graceS: victimGraceS(D), attempt },
  );
}

/**
 * The victims' request latency under the same fault (issue 22 item 3): the aggressor faults once
 * more while the victims run serve, started together as in the load window. A window of its own
 * rather than a serve beside the victims' stress, which would share their instance and be read
 * as the fault's doing (the reason the memory check has its own window too); the stress window
 * and its verdicts stay exactly as they were. After the kernel-log read, so that xidAttributed
 * judges the first fault's Xids alone, and before the recovery, which then follows both.
 */
async function latencyWindow(
  p: PlanEntry,
  fault: FaultName,
  ref: ScenarioRef,
  attempt: number,
  d: FaultDeps,
): Promise<void> {
  const D = d.durationS;
  const rest = d.transports.length > 1 ? d.transports.slice(1) : d.transports;
  const shared = await startTogether(fault, p.victims.length + 1, d);
  const settled = await Promise.allSettled([
    d.step([p.aggressor], faultSpecOf(p, fault, d), "serve-fault", "aggressor", ref.scenario, {
      graceS: aggressorGraceS(fault),
      transports: rest,
      attempt,
      ...shared,
    }),
    d.step(p.victims, serveSpec(D), "serve", "victim", ref.scenario, {
      graceS: victimGraceS(D),
      attempt,
      ...shared,
    }),
  ]);
  await shared.supervisor?.close();
  const lost = settled.find((s) => s.status === "rejected");
  if (lost) throw (lost as PromiseRejectedResult).reason;
}
