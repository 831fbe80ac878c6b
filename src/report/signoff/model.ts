// What a reviewer signs, computed from the run's check records (run.json `allChecks`): per GPU
// its partitioning route, layout, driver and tenants; per requirement PASS, FAIL, BROKEN or NOT
// ASSESSED; and the headline. Pure: the page, the PDF and the tests read the same model.

import { type Status, worstStatus } from "../../util/status.js";
import {
  type BuiltinSuite,
  HARNESS_SUITE,
  hasRole,
  isBuiltinSuite,
  SIGNOFF,
  type SuiteSignoff,
  suiteOf,
} from "../../util/suite-registry.js";
import { type CheckRecord, passKindOf } from "../../verdicts/checks.js";
import {
  type Coverage,
  type CoverageGpu,
  confinementGap,
  coverageOf,
  DEFAULT_POLICY,
  judge,
  type PolicyJudgement,
  requiresConfinement,
  type SignoffPolicy,
} from "../../verdicts/coverage.js";
import { CONFINEMENT_TITLE } from "../../verdicts/slurm.js";
import type { ContextInstance, RunContext } from "../context.js";
import { type Scenario, scenariosOf } from "./isolation.js";

/** How the page says each status: a presentation of the one vocabulary (src/util/status.ts),
 * never a fifth status. */
const RESULT_WORD = {
  passed: "PASS",
  failed: "FAIL",
  broken: "BROKEN",
  skipped: "NOT ASSESSED",
} as const satisfies Record<Status, string>;
export type Result = (typeof RESULT_WORD)[Status];
/** COMPLIANT only when the policy is met and nothing failed or was left undecided; NOT
 * COMPLIANT when a check failed; PARTIAL otherwise ("tested X of Y"). */
export type Headline = "COMPLIANT" | "NOT COMPLIANT" | "PARTIAL";

export interface GpuSummary {
  node: string;
  gpu: number;
  name: string;
  /** `MIG`, or `whole GPU (no partitioning)`. */
  route: string;
  partitioned: boolean;
  layout: string;
  driver: string;
  cuda: string;
  /** Memory slices: 8, 4 on A30. */
  slices: number;
  instances: ContextInstance[];
  tenants: number;
  verified: number;
  /** Instances used as aggressor (of a decided scenario). */
  aggressors: number;
  /** Fault kinds run on this GPU (decided). */
  faults: string[];
  /** Isolation checks ran on this GPU and none was broken or skipped. */
  isolationAssessed: boolean;
  scenarios: Scenario[];
}

export interface RequirementRow {
  key: string;
  title: string;
  result: Result;
  passed: number;
  failed: number;
  broken: number;
  skipped: number;
  /** Where it did not pass (node, GPU, instance), for the reviewer to look at first. */
  where: string[];
  /** What the verdict covered (aggressors N of M, fault kinds, routes, window), in words. */
  coverage: string;
}

export interface SignoffModel {
  headline: Headline;
  /** One line under the headline: "tested X of Y fault scenarios" or what failed. */
  tagline: string;
  reasons: string[];
  policy: SignoffPolicy;
  coverage: Coverage;
  judgement: PolicyJudgement;
  gpus: GpuSummary[];
  requirements: RequirementRow[];
  checks: readonly CheckRecord[];
}

/** The one function from a status to the page's word. */
export const resultWord = (s: Status): Result => RESULT_WORD[s];

/** A check's result as its row and evidence say it: a pass that verifies no promise names its
 * kind (a characterisation, a documented constraint), read from the record, so a reviewer does
 * not read it as a kept promise. */
export function checkResult(c: Pick<CheckRecord, "status" | "kind">): string {
  const kind = passKindOf(c);
  return kind === null || kind === "measured"
    ? resultWord(c.status)
    : `${resultWord(c.status)} (${kind.replace("-", " ")})`;
}

/** A requirement's result: its checks' worst status (a failure outranks an undecided check,
 * which outranks a pass), in the page's word; NOT ASSESSED when none was assessed. */
export function resultOf(list: readonly CheckRecord[]): Result {
  return resultWord(worstStatus(list.map((c) => c.status)));
}

export const whereOf = (c: CheckRecord) =>
  [c.node ?? "run", c.gpu === null ? null : `GPU ${c.gpu}`, c.instance?.label ?? null]
    .filter(Boolean)
    .join(" ");

function row(key: string, title: string, list: readonly CheckRecord[]): RequirementRow {
  const n = { passed: 0, failed: 0, broken: 0, skipped: 0 };
  for (const c of list) n[c.status]++;
  const bad = list.filter((c) => c.status === "failed" || c.status === "broken").map(whereOf);
  const where = [...new Set(bad)];
  return {
    key,
    title,
    result: resultOf(list),
    ...n,
    where: where.length > 6 ? [...where.slice(0, 6), `+${where.length - 6} more`] : where,
    coverage: "",
  };
}

/** Instances from the nodes (runs from this version on), else from what the checks name. */
function instancesOf(ctx: RunContext, node: string): ContextInstance[] {
  const n = ctx.nodes.find((x) => x.node === node);
  if (n?.instances) return n.instances;
  const out = new Map<string, ContextInstance>();
  for (const c of ctx.allChecks ?? [])
    if (c.node === node && c.instance && c.gpu !== null && !out.has(c.instance.uuid))
      out.set(c.instance.uuid, {
        gpu: c.gpu,
        label: c.instance.label,
        profile: c.instance.profile,
        placement: c.instance.placement,
        sm: typeof c.figures.sm === "number" ? c.figures.sm : null,
        uuid: c.instance.uuid,
        mig: c.instance.placement !== null,
      });
  return [...out.values()];
}

const composition = (list: readonly ContextInstance[]) => {
  const n = new Map<string, number>();
  for (const i of list) n.set(i.profile, (n.get(i.profile) ?? 0) + 1);
  return [...n].map(([p, k]) => (k > 1 ? `${k} × ${p}` : p)).join(", ");
};

/** A node's GPU indices, in order: those its GPU list, its instances and its checks name (a GPU
 * lost before discovery may appear in its checks alone). */
function gpuIndices(
  n: RunContext["nodes"][number],
  insts: readonly { gpu: number }[],
  checks: readonly CheckRecord[],
): number[] {
  const indices = new Set<number>([
    ...n.gpus.map((g) => g.index),
    ...insts.map((i) => i.gpu),
    ...checks.filter((c) => c.node === n.node && c.gpu !== null).map((c) => c.gpu as number),
  ]);
  return [...indices].sort((a, b) => a - b);
}

function gpusOf(ctx: RunContext, checks: readonly CheckRecord[], cov: Coverage): GpuSummary[] {
  const out: GpuSummary[] = [];
  for (const n of ctx.nodes) {
    const insts = instancesOf(ctx, n.node);
    for (const gpu of gpuIndices(n, insts, checks)) {
      const name = n.gpus.find((g) => g.index === gpu)?.name ?? "unknown GPU";
      const mine = insts.filter((i) => i.gpu === gpu);
      const partitioned = mine.some((i) => i.mig);
      const iso = checks.filter(
        (c) => hasRole(c.suite, "matrix") && c.node === n.node && c.gpu === gpu,
      );
      const scenarios = scenariosOf(checks, n.node, gpu);
      const c = cov.gpus.find((x) => x.node === n.node && x.gpu === gpu);
      const verified = new Set(c?.verified ?? []);
      out.push({
        node: n.node,
        gpu,
        name,
        route: partitioned ? "MIG" : "whole GPU (no partitioning)",
        partitioned,
        layout: `${ctx.layout ? `${ctx.layout.file} -c ${ctx.layout.config}` : "as found"}${mine.length ? `: ${composition(mine)}` : ""}`,
        driver: n.driver ?? "unknown",
        cuda: n.cuda ?? "unknown",
        slices: /\bA30\b/.test(name) ? 4 : 8,
        instances: mine,
        tenants: mine.length,
        verified: mine.filter((i) => verified.has(i.label)).length,
        aggressors: mine.filter((i) => c?.aggressors.includes(i.label)).length,
        faults: c?.faults ?? [],
        isolationAssessed:
          iso.length > 0 && iso.every((c) => c.status === "passed" || c.status === "failed"),
        scenarios,
      });
    }
  }
  return out;
}

/** The rows that are no built-in suite's (the suites' own claims are in the registry). */
const RUN_TITLE = "every selected node can be checked";
const CONFINEMENT_ROW =
  "tenant confinement: a tenant's Slurm job reaches only its own instance, as the job itself sees it";

/** The GPUs of the run for the ledger: per node the GPU indices its instances, its GPU list
 * and its checks name, with the instances' labels. */
function ledgerGpus(ctx: RunContext, checks: readonly CheckRecord[]): CoverageGpu[] {
  const out: CoverageGpu[] = [];
  for (const n of ctx.nodes) {
    const insts = instancesOf(ctx, n.node);
    for (const gpu of gpuIndices(n, insts, checks)) {
      const mine = insts.filter((i) => i.gpu === gpu);
      out.push({
        node: n.node,
        gpu,
        instances: mine.map((i) => i.label),
        mig: mine.some((i) => i.mig),
      });
    }
  }
  return out;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

/** What one requirement's verdict covered, in words. */
function coverageText(
  key: string,
  cov: Coverage,
  checks: readonly CheckRecord[],
  policy: SignoffPolicy,
): string {
  const window = cov.windowS === null ? "window unknown" : `window ${cov.windowS} s`;
  const state = (s: string) => cov.suites.find((x) => x.suite === s)?.state ?? "not run";
  if (key.startsWith(suiteOf("matrix"))) {
    const fault = key.split(":")[1];
    const mig = cov.gpus.filter((g) => g.mig && g.instances.length > 1);
    if (!mig.length && !fault) return "not run on any MIG GPU";
    const per = mig.map((g) => {
      const agg = new Set(
        g.scenarios
          .filter((s) => s.decided && (!fault || s.fault === fault))
          .map((s) => s.aggressor),
      );
      return `${g.node} GPU ${g.gpu}: aggressors ${agg.size} of ${g.instances.length}`;
    });
    const routes = cov.routes.length ? `route ${cov.routes.join(", ")}` : "route unknown";
    const kinds = fault
      ? `fault ${fault}`
      : `fault kinds ${cov.faults.length} of ${cov.allFaults.length}`;
    return [...per, kinds, routes, window].join("; ");
  }
  if (key === suiteOf("throughput")) {
    const measured = new Set(
      checks
        .filter((c) => hasRole(c.suite, "throughput") && c.instance)
        .map((c) => c.instance!.uuid),
    );
    const all = cov.gpus.reduce((a, g) => a + g.instances.length, 0);
    return `${measured.size} of ${plural(all, "instance")} measured; ${window}`;
  }
  if (key === HARNESS_SUITE) return `${plural(new Set(cov.gpus.map((g) => g.node)).size, "node")}`;
  if (key === "confinement") return confinementText(cov, policy);
  const suite = key.replace(/^suite:/, "");
  const s = cov.suites.find((x) => x.suite === suite);
  return `${state(suite)}${s?.checks ? ` (${plural(s.checks, "check")})` : ""}`;
}

/** Where confinement stands, and whether the policy waived it: the reviewer sees it either way. */
function confinementText(cov: Coverage, policy: SignoffPolicy): string {
  const gap = confinementGap(cov);
  const done = cov.confinement.filter((n) => n.state !== "not assessed").map((n) => n.node);
  const text = [
    done.length ? `assessed on ${done.join(", ")}` : "",
    gap,
    cov.confinement.length ? "" : "no MIG GPU: no tenants to confine",
  ]
    .filter(Boolean)
    .join("; ");
  return requiresConfinement(policy) ? text : `${text}; waived by the policy (${policy.source})`;
}

/** The isolation matrix's rows: one per fault kind it ran (or one for the whole matrix when
 * it ran none), then the per-GPU route and tenants. */
function matrixRows(iso: readonly CheckRecord[]): RequirementRow[] {
  const key = suiteOf("matrix");
  // The route and the tenants count are per GPU, not a fault's: they go with the isolation row.
  const faults = [
    ...new Set(
      iso
        .map((c) => c.parameters.fault)
        .filter((f): f is string => !!f && f !== "route" && f !== "all"),
    ),
  ];
  const rows: RequirementRow[] = [];
  if (faults.length === 0)
    rows.push(
      row(
        key,
        "tenant isolation: a faulting instance leaves its neighbours' throughput, memory and kernel log alone",
        iso,
      ),
    );
  for (const f of faults)
    rows.push(
      row(
        `${key}:${f}`,
        `isolation, ${f}: the fault stays in the faulting instance; its neighbours keep throughput and memory; Xids name only it; it recovers without a reset`,
        iso.filter((c) => c.parameters.fault === f),
      ),
    );
  const perGpu = iso.filter((c) => ["route", "all"].includes(c.parameters.fault ?? ""));
  if (faults.length && perGpu.length)
    rows.push(
      row(
        `${key}:tenants`,
        "isolation, per GPU: the route as found and the tenants verified isolated",
        perGpu,
      ),
    );
  return rows;
}

/** A built-in suite's own row, as the registry describes it; none for one not run that need
 * not be. */
function suiteRows(s: BuiltinSuite, f: SuiteSignoff, list: readonly CheckRecord[]) {
  if (f.rowOnlyWhenRun && !list.length) return [];
  return f.requirement === null ? matrixRows(list) : [row(s, f.requirement, list)];
}

function requirementsOf(
  checks: readonly CheckRecord[],
  cov: Coverage,
  policy: SignoffPolicy,
): RequirementRow[] {
  const of = (suite: string) => checks.filter((c) => c.suite === suite);
  const rows: RequirementRow[] = [];
  if (of(HARNESS_SUITE).length) rows.push(row(HARNESS_SUITE, RUN_TITLE, of(HARNESS_SUITE)));
  for (const [s, f] of SIGNOFF) rows.push(...suiteRows(s, f, of(s)));
  // Always a row, run or not: a reviewer must see that confinement was not assessed.
  rows.push(
    row(
      "confinement",
      CONFINEMENT_ROW,
      of(suiteOf("confinement")).filter((c) => c.title === CONFINEMENT_TITLE),
    ),
  );
  const user = [
    ...new Set(checks.map((c) => c.suite).filter((s) => !isBuiltinSuite(s) && s !== HARNESS_SUITE)),
  ];
  for (const s of user) rows.push(row(`suite:${s}`, `site suite ${s}`, of(s)));
  for (const r of rows) r.coverage = coverageText(r.key, cov, checks, policy);
  return rows;
}

/** The policy a run was judged by: the one it recorded, else the documented default. */
export function policyOf(ctx: RunContext): SignoffPolicy {
  return ctx.scope?.policy ?? DEFAULT_POLICY;
}

export function signoffModel(ctx: RunContext): SignoffModel {
  const checks = ctx.allChecks ?? [];
  const policy = policyOf(ctx);
  const coverage = coverageOf({
    checks,
    gpus: ledgerGpus(ctx, checks),
    suites: ctx.suites,
    windowS: ctx.scope?.windowS ?? null,
  });
  const judgement = judge(policy, coverage);
  const gpus = gpusOf(ctx, checks, coverage);
  const requirements = requirementsOf(checks, coverage, policy);
  const failed = checks.filter((c) => c.status === "failed");
  const broken = checks.filter((c) => c.status === "broken");
  const reasons: string[] = [];
  const base = { policy, coverage, judgement, gpus, requirements, checks };
  const tested = `tested ${judgement.tested} of ${judgement.required} fault scenarios the policy asks`;
  if (failed.length) {
    for (const r of requirements.filter((x) => x.result === "FAIL"))
      reasons.push(`failed: ${r.title} (${r.where.join(", ")})`);
    return {
      headline: "NOT COMPLIANT",
      tagline: `${failed.length} check(s) failed; ${tested}`,
      reasons,
      ...base,
    };
  }
  for (const g of gpus.filter((x) => x.partitioned))
    if (!g.isolationAssessed) reasons.push(`isolation not assessed on ${g.node} GPU ${g.gpu}`);
  for (const i of judgement.items.filter((x) => !x.met)) reasons.push(`not covered: ${i.missing}`);
  for (const n of ctx.nodes.filter((x) => x.error)) reasons.push(`${n.node} could not be checked`);
  if (broken.length)
    reasons.push(
      `${broken.length} check(s) broken, the harness could not decide: ${[...new Set(broken.map(whereOf))].slice(0, 6).join(", ")}`,
    );
  return {
    headline: reasons.length ? "PARTIAL" : "COMPLIANT",
    tagline: reasons.length ? tested : `${tested}; every check passed`,
    reasons,
    ...base,
  };
}
