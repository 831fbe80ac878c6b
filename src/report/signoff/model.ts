// What a reviewer signs, computed from the run's check records (run.json `allChecks`): per GPU
// its partitioning route, layout, driver and tenants; per requirement PASS, FAIL, BROKEN or NOT
// ASSESSED; and the headline. Pure: the page, the PDF and the tests read the same model.
import type { CheckRecord, CheckStatus } from "../../verdicts/checks.js";
import type { ContextInstance, RunContext } from "../context.js";
import { type Scenario, scenariosOf, verifiedIsolated } from "./isolation.js";

export type Result = "PASS" | "FAIL" | "BROKEN" | "NOT ASSESSED";
export type Headline = "COMPLIANT" | "NOT COMPLIANT" | "NOT ASSESSED";

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
}

export interface SignoffModel {
  headline: Headline;
  reasons: string[];
  gpus: GpuSummary[];
  requirements: RequirementRow[];
  checks: readonly CheckRecord[];
}

const BUILTIN = new Set(["layout", "stress", "nccl", "isolation", "health", "regression", "run"]);

export const RESULT_OF: Record<CheckStatus, Result> = {
  passed: "PASS",
  failed: "FAIL",
  broken: "BROKEN",
  skipped: "NOT ASSESSED",
};

export function resultOf(list: readonly CheckRecord[]): Result {
  if (list.some((c) => c.status === "failed")) return "FAIL";
  if (list.some((c) => c.status === "broken")) return "BROKEN";
  if (list.some((c) => c.status === "passed")) return "PASS";
  return "NOT ASSESSED";
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

function gpusOf(ctx: RunContext, checks: readonly CheckRecord[]): GpuSummary[] {
  const out: GpuSummary[] = [];
  for (const n of ctx.nodes) {
    const insts = instancesOf(ctx, n.node);
    const indices = new Set<number>([
      ...n.gpus.map((g) => g.index),
      ...insts.map((i) => i.gpu),
      ...checks.filter((c) => c.node === n.node && c.gpu !== null).map((c) => c.gpu as number),
    ]);
    for (const gpu of [...indices].sort((a, b) => a - b)) {
      const name = n.gpus.find((g) => g.index === gpu)?.name ?? "unknown GPU";
      const mine = insts.filter((i) => i.gpu === gpu);
      const partitioned = mine.some((i) => i.mig);
      const iso = checks.filter(
        (c) => c.suite === "isolation" && c.node === n.node && c.gpu === gpu,
      );
      const scenarios = scenariosOf(checks, n.node, gpu);
      const verified = verifiedIsolated(scenarios);
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
        isolationAssessed:
          iso.length > 0 && iso.every((c) => c.status === "passed" || c.status === "failed"),
        scenarios,
      });
    }
  }
  return out;
}

const TITLES: Record<string, string> = {
  layout: "every GPU matches the layout's config (MIG mode, instances, placements)",
  stress: "every instance computes without errors at its expected share of the GPU",
  nccl: "nccl-tests completes on every instance without wrong results",
  health: "the GPUs stay healthy: the driver answers, no uncorrected ECC error, no unexplained Xid",
  regression: "no performance regression against the previous driver",
  run: "every selected node can be checked",
};

function requirementsOf(checks: readonly CheckRecord[]): RequirementRow[] {
  const of = (suite: string) => checks.filter((c) => c.suite === suite);
  const rows: RequirementRow[] = [];
  if (of("run").length) rows.push(row("run", TITLES.run!, of("run")));
  for (const s of ["layout", "stress", "nccl"]) {
    if (s === "nccl" && !of(s).length) continue;
    rows.push(row(s, TITLES[s]!, of(s)));
  }
  const iso = of("isolation");
  const faults = [...new Set(iso.map((c) => c.parameters.fault).filter((f): f is string => !!f))];
  if (faults.length === 0)
    rows.push(
      row(
        "isolation",
        "tenant isolation: a faulting instance leaves its neighbours' throughput, memory and kernel log alone",
        iso,
      ),
    );
  for (const f of faults)
    rows.push(
      row(
        `isolation:${f}`,
        `isolation, ${f}: the fault stays in the faulting instance; its neighbours keep throughput and memory; Xids name only it; it recovers without a reset`,
        iso.filter((c) => c.parameters.fault === f),
      ),
    );
  for (const s of ["health", "regression"]) rows.push(row(s, TITLES[s]!, of(s)));
  const user = [...new Set(checks.map((c) => c.suite).filter((s) => !BUILTIN.has(s)))];
  for (const s of user) rows.push(row(`suite:${s}`, `site suite ${s}`, of(s)));
  return rows;
}

export function signoffModel(ctx: RunContext): SignoffModel {
  const checks = ctx.allChecks ?? [];
  const gpus = gpusOf(ctx, checks);
  const requirements = requirementsOf(checks);
  const failed = checks.filter((c) => c.status === "failed");
  const broken = checks.filter((c) => c.status === "broken");
  const reasons: string[] = [];
  if (failed.length) {
    for (const r of requirements.filter((x) => x.result === "FAIL"))
      reasons.push(`failed: ${r.title} (${r.where.join(", ")})`);
    return { headline: "NOT COMPLIANT", reasons, gpus, requirements, checks };
  }
  const partitioned = gpus.filter((g) => g.partitioned);
  if (partitioned.length === 0) reasons.push("no MIG-partitioned GPU was checked");
  for (const g of partitioned)
    if (!g.isolationAssessed) reasons.push(`isolation not assessed on ${g.node} GPU ${g.gpu}`);
  for (const n of ctx.nodes.filter((x) => x.error)) reasons.push(`${n.node} could not be checked`);
  if (broken.length)
    reasons.push(
      `${broken.length} check(s) broken, the harness could not decide: ${[...new Set(broken.map(whereOf))].slice(0, 6).join(", ")}`,
    );
  return {
    headline: reasons.length ? "NOT ASSESSED" : "COMPLIANT",
    reasons,
    gpus,
    requirements,
    checks,
  };
}
