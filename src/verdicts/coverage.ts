// What a run covered, and whether that is enough to sign: the coverage ledger (per GPU the
// instances used as aggressor, the fault kinds run, the routes; the suites assessed or not; the
// window each workload ran) and the sign-off policy that judges it. A headline may claim only
// what its coverage supports: a run that passed everything it tried but tried less than the
// policy asks is PARTIAL ("tested X of Y"), never COMPLIANT. Pure: the compliance page, the
// terminal and `--json` read the same judgement.
import { FAULTS } from "../chaos/history.js";
import {
  DEFAULT_POLICY_SUITES,
  HARNESS_SUITE,
  hasRole,
  LEDGER_SUITES,
  suiteOf,
} from "../util/suite-registry.js";
import { type CheckRecord, passKindOf } from "./checks.js";
import { CONFINEMENT_TITLE } from "./slurm.js";

export interface SignoffPolicy {
  /** Where the policy comes from, as the page names it: `default`, or `FILE:LINE`. */
  source: string;
  /** A name the site gives it (shown beside the source); null for the default. */
  name: string | null;
  /** `all`: every instance of a MIG GPU is the aggressor once; N: at least N per GPU. */
  aggressors: "all" | number;
  /** The fault kinds each aggressor must have run. */
  faults: readonly string[];
  /** Suites that must be assessed (every check decided), besides isolation. */
  suites: readonly string[];
  /** The shortest workload window (seconds, `--duration`) the policy accepts. */
  minWindowS: number;
  /** Tenant confinement (a tenant's job reaches only its own instance, judged through Slurm)
   * must be assessed on every node with a MIG GPU. `false` only where the site waives it
   * explicitly; a policy recorded before this key existed is read as requiring it. */
  confinement?: boolean;
}

/** Whether a policy requires tenant confinement: unless waived in so many words. */
export const requiresConfinement = (p: SignoffPolicy) => p.confinement !== false;

/** The documented default: every instance an aggressor once, every fault kind, health and
 * layout assessed, windows of at least the run's default duration (30 s). */
export const DEFAULT_POLICY: SignoffPolicy = {
  source: "default",
  name: null,
  aggressors: "all",
  faults: [...FAULTS],
  suites: DEFAULT_POLICY_SUITES,
  minWindowS: 30,
  confinement: true,
};

export function describePolicy(p: SignoffPolicy): string {
  const agg =
    p.aggressors === "all"
      ? "every instance an aggressor once"
      : `at least ${p.aggressors} aggressor(s) per GPU`;
  const confined = requiresConfinement(p)
    ? "tenant confinement assessed"
    : "tenant confinement waived";
  return `${agg}; fault kinds ${p.faults.join(", ")}; ${p.suites.length ? `${p.suites.join(" and ")} assessed` : "no other suite required"}; ${confined}; windows of at least ${p.minWindowS} s`;
}

export interface CoverageGpu {
  node: string;
  gpu: number;
  /** Instance labels the GPU had (its tenants). */
  instances: readonly string[];
  mig: boolean;
}

export interface CoverageInput {
  checks: readonly CheckRecord[];
  gpus: readonly CoverageGpu[];
  /** The suites the run selected. */
  suites: readonly string[];
  /** The workload window the run asked for (`--duration`); null when unknown (older runs). */
  windowS: number | null;
}

export interface ScenarioCoverage {
  aggressor: string;
  fault: string;
  mode: string;
  /** Victims the scenario measured. */
  victims: string[];
  /** Every verdict was decided (passed or failed), none broken or missing. */
  decided: boolean;
  /** Every verdict passed, and none was a soft route's characterisation. */
  passed: boolean;
}

export interface GpuCoverage extends CoverageGpu {
  scenarios: ScenarioCoverage[];
  /** Instances that were the aggressor of at least one decided scenario. */
  aggressors: string[];
  /** Fault kinds with at least one decided scenario. */
  faults: string[];
  routes: string[];
  /** Instances whose own faults were contained AND that survived a neighbour's fault, with
   * nothing failed in any scenario they took part in. A victim-only instance is not verified. */
  verified: string[];
}

export type SuiteState = "assessed" | "partly assessed" | "not assessed" | "not run";

export interface SuiteCoverage {
  suite: string;
  state: SuiteState;
  checks: number;
}

/** Tenant confinement on one node with a MIG GPU: `assessed` (its check passed), `failed`, or
 * `not assessed` with why (no scheduler, the slurm suite not run, the probe undecided). */
export interface NodeConfinement {
  node: string;
  state: "assessed" | "failed" | "not assessed";
  why: string;
}

export interface Coverage {
  gpus: GpuCoverage[];
  /** Per node with a MIG GPU, whether tenant confinement was assessed. */
  confinement: NodeConfinement[];
  faults: string[];
  allFaults: readonly string[];
  routes: string[];
  windowS: number | null;
  suites: SuiteCoverage[];
}

const decidedStatus = (c: CheckRecord) => c.status === "passed" || c.status === "failed";

function victimsOf(c: CheckRecord | undefined): string[] {
  return Object.keys(c?.figures ?? {})
    .map((k) => /^(.+) baseline TFLOP\/s$/.exec(k)?.[1])
    .filter((l): l is string => !!l);
}

/** The scenarios of one GPU (an aggressor and a fault), read from the isolation checks. */
export function scenarioCoverage(
  checks: readonly CheckRecord[],
  node: string,
  gpu: number,
): ScenarioCoverage[] {
  const by = new Map<string, CheckRecord[]>();
  for (const c of checks) {
    if (!hasRole(c.suite, "matrix") || c.node !== node || c.gpu !== gpu) continue;
    const fault = c.parameters.fault;
    const aggressor = c.parameters.aggressor;
    // The route and the per-GPU tenants count are not scenarios.
    if (!fault || !aggressor || fault === "route" || fault === "all") continue;
    const key = `${fault}\u0000${aggressor}`;
    by.set(key, [...(by.get(key) ?? []), c]);
  }
  return [...by].map(([key, list]) => {
    const [fault, aggressor] = key.split("\u0000") as [string, string];
    const v = list.find((c) => c.parameters.verdict === "victimsUnaffected");
    return {
      aggressor,
      fault,
      mode: list[0]?.parameters.mode ?? "mig",
      victims: victimsOf(v),
      decided: list.every(decidedStatus),
      // A soft route's characterisation passes, but it verifies no isolation.
      passed: list.every((c) => passKindOf(c) === "measured"),
    };
  });
}

/** Verified isolated: own faults contained (aggressor of a decided scenario) and survived a
 * neighbour's fault (victim of one), every scenario it took part in passed. On a whole-card
 * instance (exclusive: no neighbour to fault) its exclusivity check passing verifies it. */
export function verifiedOf(scenarios: readonly ScenarioCoverage[]): string[] {
  const own = new Map<string, boolean>();
  const survived = new Map<string, boolean>();
  const isolating = scenarios.filter((s) => s.mode === "mig" || s.mode === "exclusive");
  for (const s of isolating) {
    own.set(s.aggressor, (own.get(s.aggressor) ?? true) && s.passed);
    if (s.mode === "exclusive")
      survived.set(s.aggressor, (survived.get(s.aggressor) ?? true) && s.passed);
    for (const v of s.victims) survived.set(v, (survived.get(v) ?? true) && s.passed);
  }
  return [...own].filter(([l, ok]) => ok && survived.get(l) === true).map(([l]) => l);
}

function suiteState(list: readonly CheckRecord[], selected: boolean): SuiteState {
  if (list.length === 0) return selected ? "not assessed" : "not run";
  const decided = list.filter(decidedStatus).length;
  if (decided === list.length) return "assessed";
  return decided === 0 ? "not assessed" : "partly assessed";
}

/** How a reviewer gets confinement assessed, said wherever it was not. */
export const CONFINEMENT_HOW = `how to assess: --suites ${suiteOf("confinement")}, with each node's slurm_node set in the inventory`;

/** Each node with a MIG GPU: its confinement check's outcome, or why there is none. */
export function confinementOf(
  checks: readonly CheckRecord[],
  gpus: readonly CoverageGpu[],
  suites: readonly string[],
): NodeConfinement[] {
  const nodes = [...new Set(gpus.filter((g) => g.mig).map((g) => g.node))];
  return nodes.map((node): NodeConfinement => {
    const list = checks.filter(
      (c) => hasRole(c.suite, "confinement") && c.node === node && c.title === CONFINEMENT_TITLE,
    );
    if (list.some((c) => c.status === "failed")) return { node, state: "failed", why: "" };
    if (list.length && list.every((c) => c.status === "passed"))
      return { node, state: "assessed", why: "" };
    const undecided = list.find((c) => c.status !== "passed");
    if (undecided?.code === "NOT_ASSESSED")
      return { node, state: "not assessed", why: "no scheduler (no slurm_node)" };
    if (undecided)
      return {
        node,
        state: "not assessed",
        why: `the probe was ${undecided.status} (${undecided.code})`,
      };
    const ran =
      suites.includes(suiteOf("confinement")) ||
      checks.some((c) => hasRole(c.suite, "confinement") && c.node === node);
    return {
      node,
      state: "not assessed",
      why: ran ? "no confinement check ran" : `${suiteOf("confinement")} suite not run`,
    };
  });
}

/** The ledger's line for confinement: `NOT ASSESSED — sim01: slurm suite not run; how…`. */
export function confinementGap(cov: Pick<Coverage, "confinement">): string {
  const gaps = cov.confinement.filter((n) => n.state === "not assessed");
  if (!gaps.length) return "";
  const why = new Map<string, string[]>();
  for (const g of gaps) why.set(g.why, [...(why.get(g.why) ?? []), g.node]);
  const text = [...why].map(([w, nodes]) => `${nodes.join(", ")}: ${w}`).join("; ");
  return `tenant confinement: NOT ASSESSED — ${text}; ${CONFINEMENT_HOW}`;
}

export function coverageOf(input: CoverageInput): Coverage {
  const gpus = input.gpus.map((g): GpuCoverage => {
    const scenarios = scenarioCoverage(input.checks, g.node, g.gpu);
    const decided = scenarios.filter((s) => s.decided);
    const routes = input.checks
      .filter((c) => hasRole(c.suite, "matrix") && c.node === g.node && c.gpu === g.gpu)
      .map((c) => c.parameters.route)
      .filter((r): r is string => !!r);
    return {
      ...g,
      scenarios,
      aggressors: [...new Set(decided.map((s) => s.aggressor))],
      faults: [...new Set(decided.map((s) => s.fault))].filter((f) => f !== "exclusive"),
      routes: [...new Set(routes)],
      verified: verifiedOf(scenarios),
    };
  });
  const names = [
    ...LEDGER_SUITES,
    ...new Set([...input.suites, ...input.checks.map((c) => c.suite)]),
  ].filter((s, i, a) => a.indexOf(s) === i && s !== HARNESS_SUITE);
  return {
    gpus,
    confinement: confinementOf(input.checks, input.gpus, input.suites),
    faults: FAULTS.filter((f) => gpus.some((g) => g.faults.includes(f))),
    allFaults: FAULTS,
    routes: [...new Set(gpus.flatMap((g) => g.routes))],
    windowS: input.windowS,
    suites: names.map((suite) => {
      const list = input.checks.filter((c) => c.suite === suite);
      return { suite, state: suiteState(list, input.suites.includes(suite)), checks: list.length };
    }),
  };
}

export interface PolicyItem {
  key: string;
  what: string;
  tested: number;
  required: number;
  met: boolean;
  /** What is missing, in words; empty when met. */
  missing: string;
}

export interface PolicyJudgement {
  met: boolean;
  items: PolicyItem[];
  /** The main figure of the headline: fault scenarios tested of those the policy asks. */
  tested: number;
  required: number;
}

function scenarioItem(p: SignoffPolicy, cov: Coverage): PolicyItem {
  let tested = 0;
  let required = 0;
  const gaps: string[] = [];
  for (const g of cov.gpus.filter((x) => x.mig)) {
    const where = `${g.node} GPU ${g.gpu}`;
    if (g.instances.length === 1) {
      required++;
      const ok = g.scenarios.some((s) => s.mode === "exclusive" && s.decided);
      if (ok) tested++;
      else gaps.push(`${where}: exclusivity not checked`);
      continue;
    }
    const want =
      p.aggressors === "all" ? g.instances.length : Math.min(p.aggressors, g.instances.length);
    required += want * p.faults.length;
    // Per aggressor the policy's fault kinds it ran (decided); the best `want` aggressors count.
    const per = g.instances
      .map(
        (i) =>
          g.scenarios.filter((s) => s.aggressor === i && s.decided && p.faults.includes(s.fault))
            .length,
      )
      .sort((a, b) => b - a);
    tested += per.slice(0, want).reduce((a, b) => a + b, 0);
    const agg = g.aggressors.filter((a) => g.instances.includes(a)).length;
    const faults = p.faults.filter((f) => g.faults.includes(f));
    const left = p.faults.filter((f) => !g.faults.includes(f));
    if (agg < want || left.length)
      gaps.push(
        `${where}: aggressors ${agg} of ${g.instances.length}${p.aggressors === "all" ? "" : ` (policy ${want})`}, fault kinds ${faults.length} of ${p.faults.length}${left.length ? ` (not run: ${left.join(", ")})` : ""}`,
      );
  }
  if (!cov.gpus.some((g) => g.mig)) {
    required = Math.max(required, 1);
    gaps.push("no MIG-partitioned GPU was checked");
  }
  return {
    key: "scenarios",
    what: "fault scenarios (aggressor × fault kind)",
    tested,
    required,
    met: tested >= required && gaps.length === 0,
    missing: gaps.join("; "),
  };
}

/** Judges a ledger against a policy: each item the policy asks, tested X of Y. */
export function judge(p: SignoffPolicy, cov: Coverage): PolicyJudgement {
  const items: PolicyItem[] = [scenarioItem(p, cov)];
  for (const s of p.suites) {
    const state = cov.suites.find((x) => x.suite === s)?.state ?? "not run";
    const met = state === "assessed";
    items.push({
      key: `suite:${s}`,
      what: `${s} assessed`,
      tested: met ? 1 : 0,
      required: 1,
      met,
      missing: met ? "" : `${s} ${state}`,
    });
  }
  if (requiresConfinement(p) && cov.confinement.length) {
    const decided = cov.confinement.filter((n) => n.state !== "not assessed").length;
    items.push({
      key: "confinement",
      what: "tenant confinement assessed (a tenant's job reaches only its own instance)",
      tested: decided,
      required: cov.confinement.length,
      met: decided === cov.confinement.length,
      missing: confinementGap(cov),
    });
  }
  const w = cov.windowS;
  const wMet = w !== null && w >= p.minWindowS;
  items.push({
    key: "window",
    what: `workload windows of at least ${p.minWindowS} s`,
    tested: wMet ? 1 : 0,
    required: 1,
    met: wMet,
    missing: wMet
      ? ""
      : w === null
        ? "window length unknown (the run did not record --duration)"
        : `windows of ${w} s, the policy asks at least ${p.minWindowS} s`,
  });
  const s = items[0]!;
  return { met: items.every((i) => i.met), items, tested: s.tested, required: s.required };
}
