// The run as suite files see it: the implementation behind `slicecheck/suite`. It is installed
// on globalThis while the run loads and runs its suite files, and holds the draft of the check
// the running test makes (mocha runs tests one at a time, so there is one at a time).
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import pLimit from "p-limit";
import { SlicecheckError } from "../errors.js";
import { PASS_CODE, type PassKind, passKindOfCode } from "../util/status.js";
import {
  type CheckEvidence,
  type CheckRecord,
  type CheckSink,
  type CheckStep,
  classify,
} from "../verdicts/checks.js";
import type { BuiltWorkloads } from "../workloads/build.js";
import type { Instance } from "../workloads/instances.js";
import type { InstanceOutcome } from "../workloads/launcher.js";
import { builtins, runWorkloadOnNode } from "../workloads/node-run.js";
import { stressGraceS } from "../workloads/specs.js";
import { type SharedPhase, withUtilization } from "../workloads/utilization.js";
import { CONTEXT_KEY, type Scope, type SuiteContext } from "./api.js";
import type {
  BuiltinWorkload,
  CheckHandle,
  HarnessOptions,
  RunOptionsView,
  SuiteInstance,
  SuiteNode,
  SuiteRun,
  VerdictView,
  WorkloadBatch,
  WorkloadResult,
  WorkloadWrap,
} from "./api-types.js";
import { gatedPlan, type NodeIsolation, nodeWork } from "./node-pool.js";
import { nodeViews } from "./node-views.js";
import { DeclaredWork, isolationSeconds, type ProgressEvent } from "./progress.js";
import { resultOf, wrapFor } from "./results.js";
import type { NodeSession } from "./session.js";

/** The engines behind the built-in suites, provided by the run (they need the records, the
 * layout and the isolation scenarios, which a suite file never reaches directly). */
export interface RunServices {
  health(s: NodeSession): Promise<VerdictView[]>;
  layout(s: NodeSession): Promise<VerdictView[] | null>;
  regressions(): Promise<VerdictView[]>;
  /** The isolation scenarios of a node, for the suite that asks (its name keys the progress). */
  isolation(s: NodeSession, node: SuiteNode, suite: string): NodeIsolation;
  /** Measurements of a finished workload, recorded as they arrive. */
  measured(suite: string, outcomes: readonly InstanceOutcome[]): void;
  onLine?(inst: Instance, line: string): void;
  /** The run's own Slurm jobs on a node (slurm-drain.ts). */
  slurmJobs(s: NodeSession): SlurmJobsWindow;
}

/** What a suite gets for the run's own Slurm jobs on a node (SuiteRun.slurmJobs). slurm-drain.ts
 * implements it; declared here, with the services that hand it out, so the import goes one way. */
export interface SlurmJobsWindow {
  /** The reservation to submit into; `opened` when the run resumed its drained node for it. */
  open(): Promise<{ reservation: string | null; opened: boolean }>;
  /** Drains again a node that open() resumed; a no-op otherwise. */
  close(): Promise<void>;
}

interface Draft {
  record: CheckRecord;
  windowSet: boolean;
  note: string | null;
  passCode?: string;
  passKind?: PassKind;
}

/** A passed check's kind and code. The kind a suite named wins; else the code it set says it
 * (passCode("CHARACTERISED") meant a characterisation before kinds existed). A characterised
 * or documented-constraint pass always records its kind's code, so a database row, which keeps
 * the code and not the kind, still says which it was. */
function passOf(d: Draft): { kind: PassKind; code: string } {
  const kind = d.passKind ?? passKindOfCode(d.passCode ?? PASS_CODE.measured);
  return { kind, code: kind === "measured" ? (d.passCode ?? PASS_CODE.measured) : PASS_CODE[kind] };
}

/** A figure a suite measured itself, as the outcome of a workload that ran and gave it. */
function measuredOutcome(
  suite: string,
  inst: SuiteInstance,
  metric: string,
  value: number,
  unit: string,
): InstanceOutcome {
  const now = Date.now();
  return {
    instance: { ...inst },
    workload: suite,
    repetition: 1,
    exitCode: 0,
    signal: null,
    timedOut: false,
    durationMs: 0,
    startMs: now,
    stopMs: now,
    died: false,
    incomplete: null,
    harnessError: null,
    log: "",
    stdout: "",
    parseError: null,
    measurements: [
      {
        node: inst.node,
        gpuUuid: inst.gpuUuid,
        instanceUuid: inst.uuid,
        profile: inst.profile,
        placement: inst.placement,
        workload: suite,
        metric,
        value,
        unit,
        repetition: 1,
      },
    ],
  };
}

export { instanceTitle, nodeViews } from "./node-views.js";

export class HarnessContext implements SuiteContext {
  private draft: Draft | null = null;
  /** Attachments as they are produced (allure-mocha, while the test runs). */
  onEvidence: ((e: CheckEvidence) => void) | null = null;
  /** The suite whose file is being loaded: `harness()` calls bind to it. */
  loading: string | null = null;
  readonly faultSuites = new Set<string>();
  /** Progress events (a node's workload started, a test began), for the terminal. */
  onProgress: ((e: ProgressEvent) => void) | null = null;
  /** The work each suite declared per node while it loaded, for the progress estimate. */
  readonly declared = new DeclaredWork();
  readonly views: Map<string, SuiteNode>;

  constructor(
    readonly sessions: readonly NodeSession[],
    readonly options: RunOptionsView,
    readonly sink: CheckSink,
    private readonly services: RunServices,
    /** Per node: why a fault-injecting suite may not touch it (interlocks), or null. */
    readonly refusals: ReadonlyMap<string, string | null>,
    private readonly signal: AbortSignal,
    /** Nodes that run a workload batch at once (`--concurrency`). */
    concurrency = 64,
  ) {
    this.views = nodeViews(sessions);
    this.nodeLimit = pLimit(Math.max(1, concurrency));
  }

  private readonly nodeLimit: ReturnType<typeof pLimit>;
  /** Per node: the built-in workloads' paths there, resolved (or built) once. */
  private readonly programs = new Map<string, Promise<BuiltWorkloads>>();

  install(): void {
    (globalThis as Record<symbol, unknown>)[CONTEXT_KEY] = this;
  }

  uninstall(): void {
    const g = globalThis as Record<symbol, unknown>;
    if (g[CONTEXT_KEY] === this) delete g[CONTEXT_KEY];
  }

  private session(name: string): NodeSession {
    const s = this.sessions.find((x) => x.node.name === name);
    if (!s) throw new SlicecheckError("INTERNAL", `no session for node ${name}`);
    return s;
  }

  harness(o: HarnessOptions = {}): SuiteRun {
    const suite = this.loading ?? "suite";
    const faults = o.injectsFaults === true;
    if (faults) this.faultSuites.add(suite);
    const nodes = [...this.views.values()].map((n): SuiteNode => {
      const refusal = faults ? (this.refusals.get(n.name) ?? null) : null;
      if (!refusal) return n;
      return {
        ...n,
        refusal,
        exec: () =>
          Promise.reject(
            new SlicecheckError(
              "INTERLOCK",
              `${n.name}: suite ${suite} injects faults and the node is refused: ${refusal}`,
              { node: n.name },
            ),
          ),
      };
    });
    const refused = (name: string) => (faults ? (this.refusals.get(name) ?? null) : null);
    return {
      options: this.options,
      nodes,
      workload: (name, wo = {}) =>
        this.batch(
          suite,
          name,
          wo.durationS ?? this.options.durationS,
          wo.instances,
          refused,
          wo.wrap,
        ),
      checks: () => this.sink.checks,
      isolation: (node) => {
        const why = refused(node.name) ?? node.error;
        if (why) return { start() {}, scenarios: [], problem: why, route: async () => null };
        const plan = this.services.isolation(this.session(node.name), node, suite);
        this.declared.add(
          suite,
          node.name,
          isolationSeconds(plan.scenarios, this.options.durationS),
        );
        // Nodes side by side, at most --concurrency at once; the node's step begins when its
        // slot does, so a node waiting for one is not counted as running.
        return gatedPlan(plan, (go) =>
          this.nodeLimit(() => {
            this.onProgress?.({ kind: "phase", node: node.name, key: suite, atMs: Date.now() });
            return go();
          }),
        );
      },
      eachNode: (fn) => nodeWork((f) => this.nodeLimit(f), nodes, fn),
      health: (node) => this.services.health(this.session(node.name)),
      layout: (node) => this.services.layout(this.session(node.name)),
      regressions: () => this.services.regressions(),
      slurmJobs: (node) => this.services.slurmJobs(this.session(node.name)),
      program: (node, name) => {
        let p = this.programs.get(node.name);
        if (!p) {
          p = builtins(this.session(node.name));
          this.programs.set(node.name, p);
          // A failed build is asked again next time, not remembered.
          p.catch(() => this.programs.delete(node.name));
        }
        return p.then((b) => b.binaries[name]);
      },
    };
  }

  private batch(
    suite: string,
    name: BuiltinWorkload,
    durationS: number,
    only: readonly SuiteInstance[] | undefined,
    refused: (node: string) => string | null,
    wrap?: WorkloadWrap,
  ): WorkloadBatch {
    const all = only ?? [...this.views.values()].flatMap((n) => n.instances);
    const byNode = new Map<string, SuiteInstance[]>();
    for (const i of all) byNode.set(i.node, [...(byNode.get(i.node) ?? []), i]);
    // Its instances run at once on a node, so the node's step lasts one duration.
    for (const node of byNode.keys()) this.declared.add(suite, node, durationS);
    let started: Map<string, Promise<Map<string, WorkloadResult>>> | null = null;
    const start = () => {
      if (started) return started;
      started = new Map();
      for (const [node, list] of byNode) {
        const why = refused(node);
        const p = this.nodeLimit(async () => {
          if (why) throw new SlicecheckError("INTERLOCK", `${node}: refused: ${why}`, { node });
          const s = this.session(node);
          if (s.error) throw s.error;
          const detail = name === suite ? "running" : `${name} running`;
          this.onProgress?.({ kind: "phase", node, key: suite, detail, atMs: Date.now() });
          // While the stress runs: each instance's SM activity and memory in use.
          // The sampler's supervisor is the workloads' too: one login for the phase.
          const run = (shared: SharedPhase | null) =>
            runWorkloadOnNode(s, list, name === "gpu-burn" ? "gpu-burn" : name, {
              ...shared,
              durationS,
              // A suite named after its workload (the built-in stress and nccl) logs at
              // <out>/<node>/ (the log's name carries the workload); any other suite gets a
              // folder of its own, so the same workload never collides.
              outDir:
                suite === name
                  ? this.options.outDir
                  : join(this.options.outDir, suite.replace(/[^\w.-]+/g, "_")),
              signal: this.signal,
              onLine: this.services.onLine,
              // A stress ends on its own at its duration: past a fifth more (10 s at least) it
              // hangs. Not less than 10 s: seven CUDA contexts created at once on one GPU, or a
              // node busy with something else, start late (a 3 s stress on 4 loaded nodes ran
              // 8 s, CI of 4 Dec), and a false STRESS_FAILED is worse than a hang caught later.
              graceS: name === "stress" || name === "serve" ? stressGraceS(durationS) : undefined,
              ...(wrap ? { wrap: wrapFor(list, wrap) } : {}),
            });
          const { result: r, util } = await withUtilization(
            s,
            list,
            { sample: name === "stress", durationS },
            run,
          );
          if (r.skipped)
            throw new SlicecheckError("TOOL_MISSING", `${node}: ${r.skipped}`, { node });
          this.services.measured(suite, r.outcomes);
          const m = new Map<string, WorkloadResult>();
          for (const o of r.outcomes) {
            const view = list.find((v) => v.uuid === o.instance.uuid);
            if (view) m.set(view.uuid, resultOf(o, view, util));
          }
          return m;
        });
        p.catch(() => {});
        started.set(node, p);
      }
      return started;
    };
    return {
      start: () => void start(),
      result: async (inst) => {
        const p = start().get(inst.node);
        if (!p) throw new SlicecheckError("USAGE", `${inst.label} is not in this workload batch`);
        const r = (await p).get(inst.uuid);
        if (!r)
          throw new SlicecheckError("INTERNAL", `${inst.node} ${inst.label}: no result came back`);
        return r;
      },
    };
  }

  // --- the check of the running test --------------------------------------------------------

  begin(
    c: Omit<CheckRecord, "id" | "startMs" | "stopMs" | "status" | "code" | "message">,
  ): CheckRecord {
    const now = Date.now();
    const record: CheckRecord = {
      ...c,
      id: this.sink.nextId(),
      status: "passed",
      code: "OK",
      message: "",
      startMs: now,
      stopMs: now,
    };
    this.draft = { record, windowSet: false, note: null };
    return record;
  }

  /** Ends the running check with the test's outcome; returns the finished record. */
  end(err: unknown, pending = false): CheckRecord | null {
    const d = this.draft;
    this.draft = null;
    if (!d) return null;
    const r = d.record;
    if (!d.windowSet) r.stopMs = Date.now();
    if (pending) {
      r.status = "skipped";
      r.code = "SKIPPED";
      r.message = "skipped";
    } else {
      const c = classify(err);
      r.status = c.status;
      r.code = c.code;
      if (c.status === "passed") Object.assign(r, passOf(d));
      r.message = c.status === "passed" ? (d.note ?? "") : c.message;
    }
    this.sink.add(r);
    return r;
  }

  get running(): CheckRecord | null {
    return this.draft?.record ?? null;
  }

  current(): CheckHandle {
    const d = this.draft;
    if (!d)
      throw new Error(
        "slicecheck/suite: current() is only valid inside a test (it, not describe or a hook)",
      );
    const r = d.record;
    return {
      figures: (f) => Object.assign(r.figures, f),
      evidence: (name, content, contentType = "text/plain") => {
        const e = { name, content, contentType };
        r.evidence.push(e);
        this.onEvidence?.(e);
      },
      evidenceFile: (name, path, contentType = "text/plain") => {
        const e = { name, path, contentType };
        r.evidence.push(e);
        this.onEvidence?.(e);
      },
      measure: (inst, metric, value, unit) =>
        this.services.measured(r.suite, [measuredOutcome(r.suite, inst, metric, value, unit)]),
      step: async (name, fn) => {
        const step: CheckStep = { name, status: "passed", startMs: Date.now(), stopMs: 0 };
        r.steps.push(step);
        try {
          return await fn();
        } catch (e) {
          const c = classify(e);
          step.status = c.status;
          throw e;
        } finally {
          step.stopMs = Date.now();
        }
      },
      phase: (name, startMs, stopMs, status = "passed") =>
        void r.steps.push({ name, status, startMs, stopMs }),
      window: (startMs, stopMs) => {
        d.windowSet = true;
        r.startMs = Math.min(r.startMs, startMs);
        r.stopMs = Math.max(stopMs, Date.now());
      },
      parameter: (name, value) => {
        r.parameters[name] = value;
      },
      passCode: (code) => {
        d.passCode = code;
      },
      passKind: (kind) => {
        d.passKind = kind;
      },
      note: (text) => {
        d.note = text;
      },
    };
  }

  /** The scope (node, GPU, instance) a test sits in, from the describes the API made. */
  static scopeOf(test: { parent?: unknown }, key: symbol): Scope {
    const out: Scope = {};
    let s = test.parent as ({ parent?: unknown } & Record<symbol, Scope | undefined>) | undefined;
    while (s) {
      const sc = s[key];
      if (sc) {
        out.node ??= sc.node;
        out.gpu ??= sc.gpu;
        out.instance ??= sc.instance;
      }
      s = s.parent as typeof s;
    }
    return out;
  }
}

/** checks.jsonl: one line per check as it finishes, so an interrupted run keeps them. */
export function checksFileWriter(outDir: string): (c: CheckRecord) => void {
  const file = join(outDir, "checks.jsonl");
  return (c) => appendFileSync(file, `${JSON.stringify(c)}\n`);
}
