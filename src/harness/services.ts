// The engines behind the built-in suites, over the run's sessions: health (nvidia-smi and the
// kernel log against the run's start), the layout assert, the regression comparison over the
// records, and the isolation scenarios. Each answers in VerdictViews, which a suite turns into
// its tests' outcomes.
import { join } from "node:path";
import type { FaultName } from "../chaos/history.js";
import { History } from "../chaos/history.js";
import { type IsolationOptions, planScenarios, type ScenarioResult } from "../chaos/plan.js";
import { describeRoute, promiseText, type Route, readRoutes } from "../chaos/routes.js";
import { NodeScenarios } from "../chaos/scenario.js";
import { assertLayout } from "../mig/apply/index.js";
import { intendedGroups, intendedName } from "../mig/apply/intended.js";
import type { LayoutConfig } from "../mig/layout/index.js";
import type { Transport } from "../transport/types.js";
import { worstStatus } from "../util/status.js";
import type { CheckSink, CheckStatus, ExtraCheck } from "../verdicts/checks.js";
import { HEALTH_QUERY, healthChecks, layoutChecks } from "../verdicts/health.js";
import type { ScenarioRef } from "../verdicts/isolation.js";
import { scenarioJudge, verdictNamesOf } from "../verdicts/routes.js";
import type { Verdict } from "../verdicts/types.js";
import type { ScenarioOutcome, ScenarioView, SuiteNode, VerdictView } from "./api-types.js";
import type { NodeIsolation } from "./node-pool.js";
import { instanceTitle } from "./node-views.js";
import type { NodeSession } from "./session.js";
import { ISOLATION_CODES, verdictView } from "./verdict-view.js";

const FAIL_CODE: Record<ExtraCheck["suite"], string> = {
  layout: "LAYOUT_DRIFT",
  health: "HEALTH",
  regression: "DRIVER_REGRESSION",
};

export function viewOfExtra(x: ExtraCheck): VerdictView {
  return {
    title: x.title,
    gpu: x.gpu,
    status: x.status,
    kind: x.status === "passed" ? "measured" : null,
    code:
      x.status === "failed"
        ? (x.code ?? FAIL_CODE[x.suite])
        : x.status === "broken"
          ? "NODE_COMMAND"
          : "OK",
    message: x.message,
    figures: { ...x.parameters },
    evidence: x.attachment ? [x.attachment] : [],
  };
}

/** An isolation verdict as the suite reads it. */
export const viewOfVerdict = (v: Verdict, gpu: number): VerdictView =>
  verdictView(v, gpu, ISOLATION_CODES);

async function dmesg(t: Transport): Promise<string[] | null> {
  const r = await t.exec({ argv: ["dmesg"] }, { timeoutMs: 30_000 });
  return r.exitCode === 0 ? r.stdout.split("\n").filter(Boolean) : null;
}

/** The kernel log at the run's start, per node (the health suite compares against it). */
export async function readStartDmesg(
  sessions: readonly NodeSession[],
): Promise<Map<string, string[] | null>> {
  const out = new Map<string, string[] | null>();
  await Promise.all(
    sessions.map(async (s) => {
      if (s.error) return;
      out.set(s.node.name, await dmesg(s).catch(() => null));
    }),
  );
  return out;
}

export async function healthOf(
  s: NodeSession,
  dmesgAtStart: ReadonlyMap<string, string[] | null>,
  sink: CheckSink,
  /** The run's suites that declared they inject faults: their faults' Xids may be excused. */
  faultSuites: ReadonlySet<string>,
): Promise<VerdictView[]> {
  let smiExit: number | null = null;
  let smiOutput = "not read";
  let after: string[] | null = null;
  try {
    const smi = await s.exec(
      { argv: ["nvidia-smi", `--query-gpu=${HEALTH_QUERY}`, "--format=csv,noheader,nounits"] },
      { timeoutMs: 60_000 },
    );
    smiExit = smi.exitCode;
    smiOutput = smi.exitCode === 0 ? smi.stdout : `${smi.stdout}${smi.stderr}`;
    after = await dmesg(s);
  } catch (e) {
    smiOutput = (e as Error).message;
  }
  // The faults a fault-injecting suite injected in this run, with their aggressors' GI/CI
  // (from the label gpu0/gi1/ci0): only the Xids those produce there are excused.
  const injected = sink.checks
    .filter((c) => faultSuites.has(c.suite) && c.node === s.node.name && c.gpu !== null)
    .flatMap((c) => {
      const fault = c.parameters.fault;
      if (!fault || ["all", "exclusive", "route", "tenants"].includes(fault)) return [];
      const m = /\/gi(\d+)(?:\/ci(\d+))?/.exec(c.parameters.aggressor ?? "");
      return [
        {
          gpu: c.gpu as number,
          fault,
          gpuInstanceId: m ? Number(m[1]) : null,
          computeInstanceId: m?.[2] !== undefined ? Number(m[2]) : null,
        },
      ];
    });
  const gpus = new Map<number, string[]>();
  for (const i of s.discovered?.instances ?? [])
    gpus.set(i.gpu, [
      ...(gpus.get(i.gpu) ?? []),
      ...(i.gpuInstanceId === null
        ? [`gpu${i.gpu}`]
        : [`gpu${i.gpu}/gi${i.gpuInstanceId}/ci${i.computeInstanceId ?? 0}`]),
    ]);
  // A GPU lost at discovery has no instance, but it is still one of the node's GPUs.
  for (const l of s.discovered?.lost ?? [])
    if (l.index !== null && !gpus.has(l.index)) gpus.set(l.index, []);
  return healthChecks({
    node: s.node.name,
    smiExit,
    smiOutput,
    dmesgBefore: dmesgAtStart.get(s.node.name) ?? null,
    dmesgAfter: after,
    injected,
    gpus: [...gpus].map(([index, instances]) => ({ index, instances })),
  }).map(viewOfExtra);
}

export async function layoutOf(
  s: NodeSession,
  config: LayoutConfig | null,
  o: { runId: string; journalDir: string },
): Promise<VerdictView[] | null> {
  // Without --layout, the node's intended layout from the inventory (loaded and checked before
  // the run started, so this cannot fail on bad input now).
  const group = config ? null : intendedGroups([s.node], false)[0];
  const held = config ?? group?.config;
  if (!held) return null;
  const reports = await assertLayout([s.node], held, {
    runId: o.runId,
    journalDir: o.journalDir,
    transports: new Map([[s.node.name, s]]),
  });
  const intended = group ? intendedName({ file: group.file, config: held.name }) : undefined;
  return layoutChecks(reports, held.name, intended).map(viewOfExtra);
}

/** Ops whose workload must end well: its `fail` (died, killed, timed out) is the step's own
 * failure. The aggressor's fault is meant to fail, and the kernel log read only observes. */
const MUST_END_WELL = new Set<string>([
  "baseline",
  "load",
  "memcheck",
  "recovery",
  "tenants",
  "serve-baseline",
  "serve",
]);

/** The verdicts that judge each op: a failed verdict fails the step it judges. */
const JUDGED_BY: Record<string, string[]> = {
  fault: ["faultContained", "memoryIsolated"],
  load: ["victimsUnaffected"],
  memcheck: ["victimsUnaffected", "memoryIsolated"],
  dmesg: ["xidAttributed"],
  recovery: ["recovered"],
  exclusivity: ["exclusive"],
  tenants: ["slowdownPerTenants"],
  serve: ["victimsLatencyUnaffected"],
};

const worse = (a: CheckStatus, b: CheckStatus) => worstStatus([a, b]);

/** A scenario's steps from its history, each with its own outcome: failed where a workload
 * that must end well did not (a victim that died under load), broken where the harness lost
 * its outcome or the workload was stopped before its end. */
export function stepsOf(history: History, ref: ScenarioRef): ScenarioOutcome["steps"] {
  const mine = history.events.filter(
    (e) => e.data.scenario === ref.scenario || e.data.scenario === ref.baseline,
  );
  // A victim slowed or stopped is measured once more before its verdict stands: the outcome a
  // step shows is that of the attempt the verdicts judged (the last), its span all of them.
  const last = Math.max(1, ...mine.map((e) => e.data.attempt ?? 1));
  const judged = (e: (typeof mine)[number]) => (e.data.attempt ?? 1) === last;
  const ops = new Map<
    string,
    { start: number; stop: number; status: CheckStatus; judgedBy: string[] }
  >();
  for (const e of mine) {
    const t = Date.parse(e.time);
    const name =
      e.data.scenario === ref.baseline && e.op === "baseline"
        ? "baseline (victims alone)"
        : (STEP_NAMES[e.op] ?? e.op);
    const cur = ops.get(name) ?? {
      start: t,
      stop: t,
      status: "passed" as CheckStatus,
      judgedBy: e.data.scenario === ref.baseline ? [] : (JUDGED_BY[e.op] ?? []),
    };
    cur.start = Math.min(cur.start, t);
    cur.stop = Math.max(cur.stop, t);
    if (e.type === "info" && e.data.harnessError) cur.status = worse(cur.status, "broken");
    if (e.type === "fail" && MUST_END_WELL.has(e.op) && judged(e))
      cur.status = worse(cur.status, e.data.incomplete ? "broken" : "failed");
    ops.set(name, cur);
  }
  return [...ops].map(([name, v]) => ({
    name,
    status: v.status,
    startMs: v.start,
    stopMs: v.stop,
    judgedBy: v.judgedBy,
  }));
}

const STEP_NAMES: Record<string, string> = {
  fault: "fault injected in the aggressor",
  load: "victims under load",
  memcheck: "victims' memory check",
  dmesg: "kernel log read",
  recovery: "aggressor recovery",
  harness: "harness",
  "serve-baseline": "victims' latency alone",
  "serve-fault": "fault injected again, for the latency window",
  serve: "victims' latency under the fault",
};

type PlannedScenario = ReturnType<typeof planScenarios>[number];
type Waiter = {
  resolve: (r: ScenarioOutcome) => void;
  reject: (e: unknown) => void;
  p: Promise<ScenarioOutcome>;
};
const key = (gpu: number, label: string, fault: string) => `${gpu} ${label} ${fault}`;

/** What one planned aggressor is tried with: the faults, or exclusivity on a whole-card GI,
 * plus the slowdown per tenant count on a soft route. */
function scenarioKinds(
  p: PlannedScenario,
  faults: readonly FaultName[],
  tenants: readonly number[],
): string[] {
  if (p.mode === "exclusive") return ["exclusive"];
  if ((p.mode === "time-slicing" || p.mode === "mps") && tenants.length > 0)
    return [...faults, "tenants"];
  return [...faults];
}

/** One settled-later outcome per scenario, by key, resolved as each is judged. */
function waitersFor(
  plan: readonly PlannedScenario[],
  kindsOf: (p: PlannedScenario) => string[],
): Map<string, Waiter> {
  const waiting = new Map<string, Waiter>();
  for (const p of plan)
    for (const fault of kindsOf(p)) {
      let resolve!: (r: ScenarioOutcome) => void;
      let reject!: (e: unknown) => void;
      const pr = new Promise<ScenarioOutcome>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      pr.catch(() => {});
      waiting.set(key(p.gpu, p.aggressorLabel, fault), { resolve, reject, p: pr });
    }
  return waiting;
}

function scenarioView(
  p: PlannedScenario,
  fault: string,
  waiter: { p: Promise<ScenarioOutcome> },
  latencyFaults: readonly string[] | undefined,
): ScenarioView {
  const result = () => waiter.p;
  return {
    gpu: p.gpu,
    mode: p.mode,
    route: describeRoute(p.route),
    aggressor: {
      label: p.aggressorLabel,
      profile: p.aggressor.profile,
      placement: p.aggressor.placement,
      title:
        p.mode === "mig" || p.mode === "exclusive"
          ? instanceTitle(p.aggressor)
          : `${p.mode} process A (whole GPU)`,
    },
    fault,
    verdictNames:
      p.mode === "exclusive" ? ["exclusive"] : verdictNamesOf(p.route, fault, { latencyFaults }),
    result,
  };
}

/** The node's isolation scenarios: planned now (so the suite can name its tests), run when
 * started, each resolving as soon as it is judged. */
export function isolationOf(
  s: NodeSession,
  node: SuiteNode,
  o: Omit<
    IsolationOptions<Verdict>,
    "history" | "inventory" | "onScenario" | "faults" | "judge"
  > & {
    faults: readonly FaultName[];
    history: History;
  },
): NodeIsolation {
  const inv = s.discovered;
  const plan = planScenarios(inv?.instances ?? [], o.aggressors);
  const kindsOf = (p: PlannedScenario) => scenarioKinds(p, o.faults, o.tenants ?? []);
  const waiting = waitersFor(plan, kindsOf);
  let started = false;
  let routesRead: (m: Map<number, Route> | null) => void = () => {};
  const routes = new Promise<Map<number, Route> | null>((r) => {
    routesRead = r;
  });
  // Settles when every scenario of the node has: the node's slot of --concurrency is held
  // until then (node-pool.ts gatedPlan); it never rejects, each scenario carries its own error.
  let done: Promise<void> = Promise.resolve();
  const startAll = (): Promise<void> => {
    if (started) return done;
    started = true;
    done = (async () => {
      // Before any scenario: the isolation suite's own MPS daemon must not be read as the
      // node's route.
      routesRead(await readRoutes(s, inv?.instances ?? []).catch(() => null));
      let scenarioStart = Date.now();
      const onScenario = (r: ScenarioResult<Verdict>, ref: ScenarioRef) => {
        const w = waiting.get(key(r.gpu, r.aggressor, r.fault));
        const now = Date.now();
        w?.resolve({
          verdicts: r.verdicts.map((v) => viewOfVerdict(v, r.gpu)),
          startMs: scenarioStart,
          stopMs: now,
          steps: stepsOf(o.history, ref),
        });
        scenarioStart = now;
      };
      try {
        const res = await new NodeScenarios([s], {
          ...o,
          judge: scenarioJudge,
          faults: [...o.faults],
          inventory: inv ?? { instances: [] },
          onScenario,
        }).run();
        const why = res.error ?? "the scenario did not run";
        for (const w of waiting.values()) w.reject(new Error(why));
      } catch (e) {
        for (const w of waiting.values()) w.reject(e);
      }
    })();
    return done;
  };
  const scenarios: ScenarioView[] = plan.flatMap((p) =>
    kindsOf(p).map((fault) =>
      // Asking does not start the node: the run's slot does (HarnessContext, gatedPlan).
      scenarioView(p, fault, waiting.get(key(p.gpu, p.aggressorLabel, fault))!, o.latencyFaults),
    ),
  );
  return {
    start: startAll,
    scenarios,
    route: async (gpu) => {
      const r = (await routes)?.get(gpu);
      return r ? { route: describeRoute(r), kind: r.kind, promises: promiseText(r) } : null;
    },
    problem:
      plan.length === 0
        ? `${node.name}: no GPU with MIG instances or without MIG: nothing to check`
        : null,
  };
}

export function isolationHistory(outDir: string): History {
  return new History(join(outDir, "history.jsonl"));
}
