import { join } from "node:path";
import { SlicecheckError } from "../errors.js";
import { parseXid } from "../nvsmi/xid.js";
import type { Transport } from "../transport/types.js";
import {
  baselineProblem,
  exclusivity,
  judgeScenario,
  remeasureReason,
  type ScenarioRef,
  type VerdictOptions,
} from "../verdicts/isolation.js";
import type { Verdict } from "../verdicts/types.js";
import { discoverInstances, type Instance } from "../workloads/instances.js";
import { type InstanceOutcome, runOnInstances } from "../workloads/launcher.js";
import { instanceLabel } from "../workloads/node-run.js";
import { stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import { eventDataOf } from "./event-data.js";
import { aggressorGraceS, aggressorSpec, memcheckSpec, victimGraceS } from "./faults.js";
import {
  type ChaosEvent,
  type EventData,
  type EventOp,
  type FaultName,
  type History,
  type ScenarioKind,
  scenarioKey,
  type XidSeen,
} from "./history.js";

export interface IsolationOptions extends VerdictOptions {
  runId: string;
  faults: readonly FaultName[];
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
  onScenario?: (r: ScenarioResult, ref: ScenarioRef) => void;
}

/**
 * mig: the instances of a MIG GPU. time-slicing and mps: two processes on one GPU without MIG
 * (soft partitioning), plain and under MPS; they are measured the same way, and their failures
 * are the finding: soft partitioning shares throughput and memory and, under MPS, fatal faults.
 * exclusive: a GPU whose MIG layout is one instance over the whole card (7g): one tenant, no
 * neighbour to fault; what it promises is that nothing else runs on the GPU.
 */
export type IsolationMode = "mig" | "time-slicing" | "mps" | "exclusive";

export interface ScenarioResult {
  mode: IsolationMode;
  node: string;
  gpu: number;
  aggressor: string;
  profile: string;
  fault: ScenarioKind;
  verdicts: Verdict[];
}

export interface IsolationNodeResult {
  node: string;
  results: ScenarioResult[];
  /** The node could not be checked at all (unreachable, no GPU with two instances). */
  error: string | null;
}

class HarnessLost extends Error {}

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

/** `00000000:07:00.0` and `0000:07:00` both become `07:00`. */
export function busKey(pci: string): string {
  const m = /([0-9a-f]{2}):([0-9a-f]{2})(?:\.\d)?\s*$/i.exec(pci.trim());
  return m ? `${m[1]}:${m[2]}`.toLowerCase() : pci.toLowerCase();
}

export interface PlanEntry {
  mode: IsolationMode;
  gpu: number;
  aggressor: Instance;
  victims: Instance[];
  aggressorLabel: string;
  /** Soft partitioning runs two processes on one device: the victim's own label. */
  victimLabel: string | null;
}

/** The scenarios of a node, in the order they run: per GPU, each instance (the first
 * `aggressors`) faults once while the others are measured; a GPU without MIG is tried as
 * soft partitioning, plain (time-slicing) and under MPS. Pure, so a suite can name its tests
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
      });
    } else if (list.length === 1 && list[0]!.gpuInstanceId === null) {
      for (const mode of ["time-slicing", "mps"] as const) {
        const tag = mode === "mps" ? "mps" : "ts";
        plan.push({
          mode,
          gpu,
          aggressor: { ...list[0]! },
          victims: [{ ...list[0]! }],
          aggressorLabel: `gpu${gpu}/${tag}-a`,
          victimLabel: `gpu${gpu}/${tag}-b`,
        });
      }
    }
  }
  return plan;
}

export class NodeScenarios {
  private readonly node: string;
  /** Soft partitioning runs two processes on one device: they get labels of their own. */
  private readonly labels = new WeakMap<Instance, string>();
  private readonly lag = new LagMonitor();
  private label(i: Instance): string {
    return this.labels.get(i) ?? instanceLabel(i);
  }
  constructor(
    private readonly transports: Transport[],
    private readonly o: IsolationOptions,
  ) {
    this.node = transports[0]!.node.name;
  }

  private event(
    inst: Instance | null,
    gpu: number,
    process: ChaosEvent["process"],
    op: EventOp,
    type: ChaosEvent["type"],
    data: EventData,
  ): ChaosEvent {
    return this.o.history.add({
      node: this.node,
      gpu,
      instance: inst ? this.label(inst) : `gpu${gpu}`,
      process,
      op,
      type,
      data,
    });
  }

  /** Runs `spec` on each instance, recording invoke and completion; throws HarnessLost. */
  async step(
    insts: Instance[],
    spec: WorkloadSpec,
    op: EventOp,
    process: ChaosEvent["process"],
    scenario: string,
    extra: {
      graceS: number;
      onLine?: (i: Instance, l: string) => void;
      transports?: Transport[];
      attempt?: number;
    },
  ): Promise<InstanceOutcome[]> {
    const attempt = extra.attempt ?? 1;
    const tag = attempt > 1 ? { attempt } : {};
    for (const i of insts)
      this.event(i, i.gpu, process, op, "invoke", {
        scenario,
        args: [spec.program, ...spec.args],
        ...tag,
      });
    const t0 = Date.now();
    const outcomes = await runOnInstances(extra.transports ?? this.transports, insts, spec, {
      outDir: join(
        this.o.outDir,
        "isolation",
        scenario.replaceAll("/", "_"),
        attempt > 1 ? `${op}.${attempt}` : op,
      ),
      graceS: extra.graceS,
      onLine: extra.onLine,
      signal: this.o.signal,
    });
    const stall = this.lag.maxBetween(t0, Date.now());
    const interval =
      spec.name === "stress" ? Number(spec.args[spec.args.indexOf("--interval") + 1]) : 0;
    let lost: string | null = null;
    for (const out of outcomes) {
      const data: EventData = { ...eventDataOf(out, scenario), ...tag };
      if (!out.harnessError) {
        data.durationS = spec.durationS;
        if (interval > 0) data.intervalS = interval;
        if (stall > 0) data.controllerStallMs = stall;
      }
      const type = out.harnessError ? "info" : out.exitCode === 0 && !out.timedOut ? "ok" : "fail";
      this.event(out.instance, out.instance.gpu, process, op, type, data);
      lost ??= out.harnessError;
    }
    if (lost !== null) throw new HarnessLost(lost);
    return outcomes;
  }

  private async dmesgLines(): Promise<string[]> {
    const r = await this.transports[0]!.exec(
      { argv: ["dmesg"] },
      { timeoutMs: 30_000, signal: this.o.signal },
    );
    if (r.exitCode !== 0)
      throw new Error(`dmesg exited ${r.exitCode}: ${r.stderr.trim().slice(0, 200)}`);
    return r.stdout.split("\n").filter(Boolean);
  }

  async run(): Promise<IsolationNodeResult> {
    this.lag.start();
    try {
      return await this.runAll();
    } finally {
      this.lag.stop();
    }
  }

  private async runAll(): Promise<IsolationNodeResult> {
    const inv = this.o.inventory ?? (await discoverInstances(this.transports[0]!));
    const pci = await this.pciMap();
    const plan = planScenarios(inv.instances, this.o.aggressors);
    for (const p of plan) {
      this.labels.set(p.aggressor, p.aggressorLabel);
      for (const v of p.victims) if (p.victimLabel) this.labels.set(v, p.victimLabel);
    }
    if (plan.length === 0)
      return {
        node: this.node,
        results: [],
        error: "no GPU with MIG instances or without MIG: nothing to check",
      };
    const results: ScenarioResult[] = [];
    const refs: { ref: ScenarioRef; p: PlanEntry }[] = plan.flatMap((p) =>
      this.o.faults.map((fault) => ({ ref: this.ref(p.aggressor, fault), p })),
    );
    let lostAt: string | null = null;
    let k = 0;
    for (const p of plan) {
      const label = this.label(p.aggressor);
      if (p.mode === "exclusive") {
        const ref = exclusiveRef(this.node, label, p.aggressor);
        if (lostAt === null && !this.o.signal?.aborted) {
          try {
            this.o.onProgress?.(`${this.node} ${label}: exclusivity of the whole-card instance`);
            await this.exclusive(p, ref);
          } catch (e) {
            lostAt = this.lose(p.gpu, ref.scenario, e);
          }
        }
        const result: ScenarioResult = {
          mode: p.mode,
          node: this.node,
          gpu: p.gpu,
          aggressor: label,
          profile: p.aggressor.profile,
          fault: "exclusive",
          verdicts: [exclusivity(this.o.history.events, ref)],
        };
        results.push(result);
        this.o.onScenario?.(result, ref);
        continue;
      }
      const mps = p.mode === "mps" && lostAt === null ? await this.mps(p, true) : null;
      if (mps) lostAt = this.lose(p.gpu, scenarioKey(this.node, label, "baseline"), mps);
      const baseline = scenarioKey(this.node, label, "baseline");
      try {
        if (lostAt === null && !this.o.signal?.aborted) {
          this.o.onProgress?.(`${this.node} ${label}: baseline of ${p.victims.length} victim(s)`);
          await this.baseline(p, baseline, 1);
          // A baseline the measurement itself spoiled (cut short, too few samples, killed at a
          // deadline the harness overran) is taken again once rather than judged broken.
          if (baselineProblem(this.o.history.events, baseline, 1) !== null)
            await this.baseline(p, baseline, 2);
        }
      } catch (e) {
        lostAt = this.lose(p.gpu, baseline, e);
      }
      for (const fault of this.o.faults) {
        const { ref } = refs[k++]!;
        if (lostAt === null && !this.o.signal?.aborted) {
          try {
            this.o.onProgress?.(`${this.node} ${label}: ${fault}`);
            await this.scenario(p, fault, ref, pci.get(p.gpu) ?? null, 1);
            // Slowed or stopped victims are measured once more (a fresh baseline, the fault
            // again) before a failure is reported: noise does not reproduce, a leak does.
            const again = remeasureReason(this.o.history.events, ref, this.o);
            if (again !== null && !this.o.signal?.aborted) {
              this.o.onProgress?.(`${this.node} ${label}: ${fault}: re-measuring (${again})`);
              this.event(null, p.gpu, "controller", "harness", "info", {
                scenario: ref.scenario,
                attempt: 2,
                note: `re-measured before failing: ${again}`,
              });
              await this.baseline(p, ref.scenario, 2);
              await this.scenario(p, fault, ref, pci.get(p.gpu) ?? null, 2);
            }
          } catch (e) {
            lostAt = this.lose(p.gpu, ref.scenario, e);
          }
        } else {
          this.event(null, p.gpu, "controller", "harness", "info", {
            scenario: ref.scenario,
            harnessError: lostAt ?? "interrupted before this scenario ran",
          });
        }
        const result: ScenarioResult = {
          mode: p.mode,
          node: this.node,
          gpu: p.gpu,
          aggressor: label,
          profile: p.aggressor.profile,
          fault,
          verdicts: judgeScenario(this.o.history.events, ref, this.o),
        };
        results.push(result);
        this.o.onScenario?.(result, ref);
      }
      if (p.mode === "mps" && lostAt === null) await this.mps(p, false);
    }
    return { node: this.node, results, error: null };
  }

  private baseline(p: PlanEntry, scenario: string, attempt: number): Promise<InstanceOutcome[]> {
    const D = this.o.durationS;
    return this.step(p.victims, stressSpec(D), "baseline", "victim", scenario, {
      graceS: victimGraceS(D),
      attempt,
    });
  }

  /**
   * A whole-card instance (one GI over the whole GPU) has no neighbour to fault: what it
   * promises is exclusivity. While its tenant (a stress) runs, the GPU must hold exactly one GPU
   * instance and no compute process but that tenant's.
   */
  private async exclusive(p: PlanEntry, ref: ScenarioRef): Promise<void> {
    const D = this.o.durationS;
    const t = this.transports[0]!;
    const tenant = this.step([p.aggressor], stressSpec(D), "load", "victim", ref.scenario, {
      graceS: victimGraceS(D),
    });
    // Half-way through the tenant's run, from another channel: what the driver says is on it.
    await new Promise((r) => setTimeout(r, (D * 1000) / 2));
    this.event(null, p.gpu, "controller", "exclusivity", "invoke", { scenario: ref.scenario });
    const exec = async (argv: string[]) => {
      const r = await t.exec({ argv }, { timeoutMs: 30_000, signal: this.o.signal });
      return { exitCode: r.exitCode, out: `${r.stdout}${r.stderr}` };
    };
    try {
      const lgi = await exec(["nvidia-smi", "mig", "-lgi", "-i", String(p.gpu)]);
      const apps = await exec([
        "nvidia-smi",
        "-i",
        String(p.gpu),
        "--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
        "--format=csv,noheader",
      ]);
      this.event(
        null,
        p.gpu,
        "controller",
        "exclusivity",
        lgi.exitCode === 0 && apps.exitCode === 0 ? "ok" : "fail",
        {
          scenario: ref.scenario,
          exclusivity: {
            gpuUuid: p.aggressor.gpuUuid,
            lgiExit: lgi.exitCode,
            lgi: lgi.out,
            appsExit: apps.exitCode,
            apps: apps.out,
          },
        },
      );
    } catch (e) {
      await tenant.catch(() => []);
      throw new HarnessLost(errText(e));
    }
    await tenant;
  }

  /** Starts or stops the MPS control daemon for the GPU; returns why it could not, or null. */
  private async mps(p: PlanEntry, on: boolean): Promise<string | null> {
    const env = { CUDA_VISIBLE_DEVICES: p.aggressor.gpuUuid };
    try {
      const r = on
        ? await this.transports[0]!.exec(
            { argv: ["nvidia-cuda-mps-control", "-d"] },
            { env, timeoutMs: 30_000 },
          )
        : await this.transports[0]!.exec(
            { shell: "echo quit | nvidia-cuda-mps-control" },
            { env, timeoutMs: 30_000 },
          );
      this.event(null, p.gpu, "controller", "harness", "info", {
        scenario: scenarioKey(this.node, this.label(p.aggressor), "baseline"),
        note: `MPS control daemon ${on ? "started" : "stopped"} (exit ${r.exitCode})`,
      });
      return on && r.exitCode !== 0
        ? `nvidia-cuda-mps-control -d exited ${r.exitCode}: ${r.stderr.trim()}`
        : null;
    } catch (e) {
      return errText(e);
    }
  }

  private lose(gpu: number, scenario: string, e: unknown): string {
    const msg = e instanceof HarnessLost ? e.message : errText(e);
    this.event(null, gpu, "controller", "harness", "info", { scenario, harnessError: msg });
    return msg;
  }

  private ref(a: Instance, fault: FaultName): ScenarioRef {
    const label = this.label(a);
    return {
      scenario: scenarioKey(this.node, label, fault),
      baseline: scenarioKey(this.node, label, "baseline"),
      fault,
      aggressor: label,
      gpuInstanceId: a.gpuInstanceId,
      computeInstanceId: a.computeInstanceId,
    };
  }

  private async pciMap(): Promise<Map<number, string>> {
    const r = await this.transports[0]!.exec(
      { argv: ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"] },
      { timeoutMs: 30_000 },
    );
    const out = new Map<number, string>();
    for (const line of r.stdout.split("\n")) {
      const [i, bus] = line.split(",").map((x) => x.trim());
      if (i && bus && /^\d+$/.test(i)) out.set(Number(i), busKey(bus));
    }
    return out;
  }

  private async scenario(
    p: PlanEntry,
    fault: FaultName,
    ref: ScenarioRef,
    bus: string | null,
    attempt: number,
  ): Promise<void> {
    const D = this.o.durationS;
    const before = await this.dmesgLines().catch((e: unknown) => {
      throw new HarnessLost(errText(e));
    });
    // The aggressor and the memory check go over other connections than the victims' stress
    // when there are several, so that neither waits for a channel behind the stress.
    const rest = this.transports.length > 1 ? this.transports.slice(1) : this.transports;
    let sawOom: () => void = () => {};
    const oomSeen = new Promise<void>((r) => {
      sawOom = r;
    });
    const aggressor = this.step(
      [p.aggressor],
      aggressorSpec(fault, D),
      "fault",
      "aggressor",
      ref.scenario,
      {
        graceS: aggressorGraceS(fault),
        transports: rest,
        attempt,
        onLine: (_i, l) => {
          if (/memhog allocated_bytes=\d+ requested_bytes=\d+ oom=1/.test(l)) sawOom();
        },
      },
    ).finally(() => sawOom());
    const load = this.step(p.victims, stressSpec(D), "load", "victim", ref.scenario, {
      graceS: victimGraceS(D),
      attempt,
    });
    // The memory check runs in the victims' own instances, so it gets its own window after
    // their load window: a memhog beside a victim's stress would share its compute unit and
    // read as a slowdown. The aggressor's OOM holds its memory on through this window.
    const memcheck =
      fault === "oom"
        ? load.then(async () => {
            await oomSeen;
            return this.step(p.victims, memcheckSpec(), "memcheck", "victim", ref.scenario, {
              graceS: 10,
              transports: rest,
              attempt,
            });
          })
        : Promise.resolve([]);
    const settled = await Promise.allSettled([aggressor, load, memcheck]);
    const lost = settled.find((s) => s.status === "rejected");
    if (lost) throw (lost as PromiseRejectedResult).reason;

    const tag = attempt > 1 ? { attempt } : {};
    this.event(null, p.gpu, "controller", "dmesg", "invoke", { scenario: ref.scenario, ...tag });
    let after: string[];
    try {
      after = await this.dmesgLines();
    } catch (e) {
      throw new HarnessLost(errText(e));
    }
    const fresh = after.slice(before.length);
    const xids: XidSeen[] = [];
    for (const line of fresh) {
      const ev = (() => {
        try {
          return parseXid(line).events[0];
        } catch {
          return undefined;
        }
      })();
      if (!ev || (bus !== null && busKey(ev.pci) !== bus)) continue;
      xids.push({
        xid: ev.xid,
        pci: ev.pci,
        gpuInstanceId: ev.gpuInstanceId,
        computeInstanceId: ev.computeInstanceId,
        pid: ev.pid,
        name: ev.name,
        line,
      });
    }
    this.event(null, p.gpu, "controller", "dmesg", "ok", { scenario: ref.scenario, xids, ...tag });

    await this.step(
      [p.aggressor],
      stressSpec(Math.max(1, D / 2)),
      "recovery",
      "aggressor",
      ref.scenario,
      { graceS: victimGraceS(D), attempt },
    );
  }
}
