// Runs a node's isolation scenarios (planned in plan.ts): baselines, faults with victims under
// load, the kernel log, recovery; each scenario judged as soon as it ran.
import { join } from "node:path";
import type { Transport } from "../transport/types.js";
import { discoverInstances, type Instance } from "../workloads/instances.js";
import { type InstanceOutcome, runOnInstances } from "../workloads/launcher.js";
import { instanceLabel } from "../workloads/node-run.js";
import { serveSpec, stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import type { UtilizationResult } from "../workloads/utilization.js";
import { eventDataOf } from "./event-data.js";
import { exclusiveCheck } from "./exclusive.js";
import { faultScenario, type StepExtra } from "./fault-scenario.js";
import { victimGraceS } from "./faults.js";
import {
  type ChaosEvent,
  type EventData,
  type EventOp,
  type FaultName,
  type ScenarioKind,
  type ScenarioRef,
  scenarioKey,
} from "./history.js";
import { DEFAULT_LATENCY_FAULTS } from "./isolation.js";
import {
  errText,
  exclusiveRef,
  HarnessLost,
  type IsolationNodeResult,
  type IsolationOptions,
  LagMonitor,
  mpsEnv,
  type PlanEntry,
  planScenarios,
  type ScenarioResult,
} from "./plan.js";
import { mpsControl, readDmesg, readPciMap, victimUtilization } from "./probes.js";
import { describeRoute, promisesOf } from "./routes.js";
import { TENANT_GATE_S, tenantWindows } from "./tenants.js";

export class NodeScenarios<V> {
  private readonly node: string;
  /** Soft partitioning runs two processes on one device: they get labels of their own. */
  private readonly labels = new WeakMap<Instance, string>();
  /** mps-limited: the clients' environment (their limits), per process. */
  private readonly envs = new WeakMap<Instance, Record<string, string>>();
  private readonly lag = new LagMonitor();
  private label(i: Instance): string {
    return this.labels.get(i) ?? instanceLabel(i);
  }
  constructor(
    private readonly transports: Transport[],
    private readonly o: IsolationOptions<V>,
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
    extra: StepExtra,
  ): Promise<InstanceOutcome[]> {
    const attempt = extra.attempt ?? 1;
    const tag = {
      ...(attempt > 1 ? { attempt } : {}),
      ...(extra.tenants ? { tenants: extra.tenants } : {}),
    };
    const env = insts[0] ? this.envs.get(insts[0]) : undefined;
    if (env) spec = { ...spec, env: { ...spec.env, ...env } };
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
      ...(extra.startTogetherS !== undefined ? { startTogetherS: extra.startTogetherS } : {}),
      ...(extra.gate ? { gate: extra.gate } : {}),
      ...(extra.supervisor ? { supervisor: extra.supervisor } : {}),
    });
    const stall = this.lag.maxBetween(t0, Date.now());
    const interval =
      spec.name === "stress" || spec.name === "serve"
        ? Number(spec.args[spec.args.indexOf("--interval") + 1])
        : 0;
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

  private dmesgLines(): Promise<string[]> {
    return readDmesg(this.transports[0]!, this.o.signal);
  }

  async run(): Promise<IsolationNodeResult<V>> {
    this.lag.start();
    try {
      return await this.runAll();
    } finally {
      this.lag.stop();
    }
  }

  private async runAll(): Promise<IsolationNodeResult<V>> {
    const inv = this.o.inventory ?? (await discoverInstances(this.transports[0]!));
    const pci = await readPciMap(this.transports[0]!);
    const plan = planScenarios(inv.instances, this.o.aggressors);
    for (const p of plan) {
      this.labels.set(p.aggressor, p.aggressorLabel);
      for (const v of p.victims) if (p.victimLabel) this.labels.set(v, p.victimLabel);
      if (p.limits) for (const i of [p.aggressor, ...p.victims]) this.envs.set(i, mpsEnv(p.limits));
    }
    if (plan.length === 0)
      return {
        node: this.node,
        results: [],
        error: "no GPU with MIG instances or without MIG: nothing to check",
      };
    const results: ScenarioResult<V>[] = [];
    let lostAt: string | null = null;
    for (const p of plan) {
      const label = this.label(p.aggressor);
      if (p.mode === "exclusive") {
        lostAt = await this.exclusiveEntry(p, results, lostAt);
        continue;
      }
      const underMps = p.mode === "mps" || p.mode === "mps-limited";
      const mps = underMps && lostAt === null ? await this.mps(p, true) : null;
      if (mps) lostAt = this.lose(p.gpu, scenarioKey(this.node, label, "baseline"), mps);
      const baseline = scenarioKey(this.node, label, "baseline");
      try {
        if (lostAt === null && !this.o.signal?.aborted) {
          this.o.onProgress?.(`${this.node} ${label}: baseline of ${p.victims.length} victim(s)`);
          await this.baseline(p, baseline, 1);
          // A baseline the measurement itself spoiled (cut short, too few samples, killed at a
          // deadline the harness overran) is taken again once rather than judged broken.
          if (this.o.judge.baselineProblem(this.o.history.events, baseline, 1) !== null)
            await this.baseline(p, baseline, 2);
        }
      } catch (e) {
        lostAt = this.lose(p.gpu, baseline, e);
      }
      for (const fault of this.o.faults) {
        // Each entry's own aggressor: a whole-card entry before it has no fault scenarios.
        const ref = this.ref(p.aggressor, fault);
        lostAt = await this.faultEntry(p, fault, ref, pci.get(p.gpu) ?? null, lostAt);
        this.judged(results, p, ref, fault);
      }
      lostAt = await this.tenantsEntry(p, results, lostAt);
      if (underMps && lostAt === null) await this.mps(p, false);
    }
    return { node: this.node, results, error: null };
  }

  /** A whole-card instance: its exclusivity is its one scenario. Returns why the node was lost. */
  private async exclusiveEntry(p: PlanEntry, results: ScenarioResult<V>[], lostAt: string | null) {
    const label = this.label(p.aggressor);
    const ref = exclusiveRef(this.node, label, p.aggressor);
    if (lostAt === null && !this.o.signal?.aborted) {
      try {
        this.o.onProgress?.(`${this.node} ${label}: exclusivity of the whole-card instance`);
        await this.exclusive(p, ref);
      } catch (e) {
        lostAt = this.lose(p.gpu, ref.scenario, e);
      }
    }
    const result: ScenarioResult<V> = {
      mode: p.mode,
      route: describeRoute(p.route),
      node: this.node,
      gpu: p.gpu,
      aggressor: label,
      profile: p.aggressor.profile,
      fault: "exclusive",
      verdicts: [this.o.judge.exclusivity(this.o.history.events, ref)],
    };
    results.push(result);
    this.o.onScenario?.(result, ref);
    return lostAt;
  }

  /** One fault of a partitioned GPU, re-measured once where it slowed the victims. */
  private async faultEntry(
    p: PlanEntry,
    fault: FaultName,
    ref: ScenarioRef,
    bus: string | null,
    lostAt: string | null,
  ) {
    const label = this.label(p.aggressor);
    if (lostAt === null && !this.o.signal?.aborted) {
      try {
        this.o.onProgress?.(`${this.node} ${label}: ${fault}`);
        await this.scenario(p, fault, ref, bus, 1);
        // Slowed or stopped victims, or a disturbed measurement (the fault missed them), are
        // measured once more (a fresh baseline, the fault again) before a failure or an
        // undecided is reported: noise does not reproduce, a leak does.
        // A soft route's slowdown is its characterisation, not a failure to re-measure.
        const again = promisesOf(p.route).compute
          ? this.o.judge.remeasureReason(this.o.history.events, ref, this.o)
          : null;
        if (again !== null && !this.o.signal?.aborted) {
          this.o.onProgress?.(`${this.node} ${label}: ${fault}: re-measuring (${again})`);
          this.event(null, p.gpu, "controller", "harness", "info", {
            scenario: ref.scenario,
            attempt: 2,
            note: `re-measured before judging: ${again}`,
          });
          await this.baseline(p, ref.scenario, 2);
          await this.scenario(p, fault, ref, bus, 2);
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
    return lostAt;
  }

  /** Soft routes (time-slicing, MPS): each tenant count's slowdown, where asked for. */
  private async tenantsEntry(p: PlanEntry, results: ScenarioResult<V>[], lostAt: string | null) {
    const label = this.label(p.aggressor);
    const counts = this.o.tenants ?? [];
    if ((p.mode === "time-slicing" || p.mode === "mps") && counts.length > 0) {
      const ref = { ...this.ref(p.aggressor, "oom"), fault: "tenants" as const };
      ref.scenario = scenarioKey(this.node, label, "tenants");
      if (lostAt === null && !this.o.signal?.aborted) {
        try {
          this.o.onProgress?.(`${this.node} ${label}: ${counts.join(",")} tenants`);
          await tenantWindows(
            p,
            counts,
            this.o.durationS,
            ref.scenario,
            (i, l) => this.labels.set(i, l),
            (insts, spec, scenario, n) =>
              this.step(insts, spec, "tenants", "victim", scenario, {
                graceS: victimGraceS(this.o.durationS),
                tenants: n,
                startTogetherS: TENANT_GATE_S,
              }),
          );
        } catch (e) {
          lostAt = this.lose(p.gpu, ref.scenario, e);
        }
      }
      this.judged(results, p, ref, "tenants");
    }
    return lostAt;
  }

  private judged(
    results: ScenarioResult<V>[],
    p: PlanEntry,
    ref: ScenarioRef,
    fault: ScenarioKind,
  ) {
    const result: ScenarioResult<V> = {
      mode: p.mode,
      route: describeRoute(p.route),
      node: this.node,
      gpu: p.gpu,
      aggressor: this.label(p.aggressor),
      profile: p.aggressor.profile,
      fault,
      verdicts: this.o.judge.judgeRoute(p.route, this.o.history.events, ref, this.o),
    };
    results.push(result);
    this.o.onScenario?.(result, ref);
  }

  private async baseline(p: PlanEntry, scenario: string, attempt: number): Promise<void> {
    const D = this.o.durationS;
    await this.step(p.victims, stressSpec(D), "baseline", "victim", scenario, {
      graceS: victimGraceS(D),
      attempt,
    });
    // The victims' latency alone, in a window of its own (a serve beside the stress would
    // share its instance): what victimsLatencyUnaffected compares the fault's window with.
    if (!this.o.faults.some((f) => this.measuresLatency(f))) return;
    await this.step(p.victims, serveSpec(D), "serve-baseline", "victim", scenario, {
      graceS: victimGraceS(D),
      attempt,
    });
  }

  /** exclusive.ts: while its tenant runs, what the driver lists on the whole-card GPU. */
  private exclusive(p: PlanEntry, ref: ScenarioRef): Promise<void> {
    return exclusiveCheck(p, ref, {
      durationS: this.o.durationS,
      transport: this.transports[0]!,
      signal: this.o.signal,
      step: (insts, spec, op, process, scenario, extra) =>
        this.step(insts, spec, op, process, scenario, extra),
      event: (gpu, op, type, data) => this.event(null, gpu, "controller", op, type, data),
    });
  }

  /** Starts or stops the MPS control daemon for the GPU; returns why it could not, or null. */
  private async mps(p: PlanEntry, on: boolean): Promise<string | null> {
    try {
      const r = await mpsControl(this.transports[0]!, p.aggressor.gpuUuid, on);
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

  private utilization(p: PlanEntry, scenario: string, attempt: number, u: UtilizationResult) {
    this.event(null, p.gpu, "controller", "utilization", "info", {
      scenario,
      ...(attempt > 1 ? { attempt } : {}),
      utilization: victimUtilization(p.victims, (v) => this.label(v), u),
    });
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

  /** fault-scenario.ts: the fault beside the victims' load, the kernel log, the recovery. */
  /** Whether this fault's victims also serve through a second strike (--latency-faults). */
  private measuresLatency(fault: FaultName): boolean {
    return (this.o.latencyFaults ?? DEFAULT_LATENCY_FAULTS).includes(fault);
  }

  private scenario(
    p: PlanEntry,
    fault: FaultName,
    ref: ScenarioRef,
    bus: string | null,
    attempt: number,
  ): Promise<void> {
    return faultScenario(p, fault, ref, bus, attempt, {
      durationS: this.o.durationS,
      latency: this.measuresLatency(fault),
      transports: this.transports,
      step: (insts, spec, op, process, scenario, extra) =>
        this.step(insts, spec, op, process, scenario, extra),
      event: (gpu, op, type, data) => this.event(null, gpu, "controller", op, type, data),
      dmesgLines: () => this.dmesgLines(),
      utilization: (scenario, u) => this.utilization(p, scenario, attempt, u),
      aggressorContainer: this.o.aggressorContainer ?? null,
    });
  }
}
