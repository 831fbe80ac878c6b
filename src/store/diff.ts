// Compares two snapshots of the records (before and after a driver upgrade): the MIG topology
// each GPU offered, per-instance performance, and behaviour (verdicts, apply step times).
// Pure: data in, findings out; the CLI prints them and picks the exit code.
import { compareObservations, OBSERVE_SUITE } from "./observe.js";
import type { GpuTopo, MeasurementRow, Snapshot } from "./query.js";

export interface Finding {
  area: "topology" | "performance" | "behaviour" | "utilization";
  /** What the finding is about: `sim01 gpu0 (H100-80GB)`, `H100-80GB 1g.10gb stress tflops`. */
  subject: string;
  detail: string;
  regression: boolean;
}

export interface Stats {
  mean: number;
  n: number;
  /** (max - min) / |mean| of the samples: instances of one profile and repetitions. */
  spread: number;
}

export interface PerfFinding extends Finding {
  area: "performance";
  product: string;
  profile: string;
  workload: string;
  metric: string;
  unit: string;
  before: Stats | null;
  after: Stats | null;
  /** (after - before) / |before|; null where one side is missing or zero. */
  change: number | null;
}

export interface DiffResult {
  tolerance: number;
  findings: Finding[];
  /** Performance groups compared (product × profile × workload × metric on both sides). */
  compared: number;
  regressions: number;
}

/** Apply steps are timed once per run, with no repetitions to measure their noise: below this
 * absolute change a step time is not reported, whatever the relative change. */
export const STEP_FLOOR_MS = 1000;

/** Metrics where a larger value is worse (counts of errors, times). */
export function lowerIsBetter(metric: string, unit: string): boolean {
  return /error|wrong|faulty|fail|xid|time|latency/i.test(metric) || /^(ms|us|s)$/.test(unit);
}

export function stats(values: number[]): Stats {
  const n = values.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const spread = mean === 0 ? 0 : (Math.max(...values) - Math.min(...values)) / Math.abs(mean);
  return { mean, n, spread };
}

const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
const num = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3));

function perfKey(m: MeasurementRow): string {
  return [m.product, m.profile, m.workload, m.metric].join("\u0000");
}

/** Utilization figures (SM activity, memory in use while a workload ran) are recorded with the
 * run and shown, but say how busy an instance was, not how fast: never a regression. */
export const UTILIZATION_METRIC = /^(utilization_|sm_active_|memory_used_)/;

function group(rows: MeasurementRow[]): Map<string, MeasurementRow[]> {
  const out = new Map<string, MeasurementRow[]>();
  for (const m of rows) {
    // An observation's figures are the tenants' utilization: compared by compareObservations.
    if (UTILIZATION_METRIC.test(m.metric) || m.workload === OBSERVE_SUITE) continue;
    out.set(perfKey(m), [...(out.get(perfKey(m)) ?? []), m]);
  }
  return out;
}

/**
 * A change counts only when it exceeds both the tolerance and the spread the samples show on
 * either side: a profile whose instances already differ by 8 % among themselves cannot show a
 * 6 % regression.
 */
export function comparePerformance(
  before: MeasurementRow[],
  after: MeasurementRow[],
  tolerance: number,
): { findings: PerfFinding[]; compared: number } {
  const b = group(before);
  const a = group(after);
  const findings: PerfFinding[] = [];
  let compared = 0;
  for (const key of [...new Set([...b.keys(), ...a.keys()])].sort()) {
    const bs = b.get(key);
    const as = a.get(key);
    const first = (bs ?? as)?.[0];
    if (!first) continue;
    const base = {
      area: "performance" as const,
      subject: `${first.product} ${first.profile} ${first.workload} ${first.metric}`,
      product: first.product,
      profile: first.profile,
      workload: first.workload,
      metric: first.metric,
      unit: first.unit,
    };
    if (!bs || !as) {
      findings.push({
        ...base,
        detail: bs ? "measured before, not after" : "measured after, not before",
        regression: false,
        before: bs ? stats(bs.map((m) => m.value)) : null,
        after: as ? stats(as.map((m) => m.value)) : null,
        change: null,
      });
      continue;
    }
    compared++;
    const sb = stats(bs.map((m) => m.value));
    const sa = stats(as.map((m) => m.value));
    const worseUp = lowerIsBetter(first.metric, first.unit);
    if (sb.mean === 0) {
      // An error count going from 0 to anything is a change no percentage can express.
      if (sa.mean === 0) continue;
      findings.push({
        ...base,
        detail: `0 → ${num(sa.mean)} ${first.unit}`,
        regression: worseUp,
        before: sb,
        after: sa,
        change: null,
      });
      continue;
    }
    const change = (sa.mean - sb.mean) / Math.abs(sb.mean);
    const noise = Math.max(sb.spread, sa.spread);
    if (Math.abs(change) <= tolerance || Math.abs(change) <= noise) continue;
    const worse = worseUp ? change > 0 : change < 0;
    findings.push({
      ...base,
      detail: `${num(sb.mean)} → ${num(sa.mean)} ${first.unit} ${pct(change)} (spread ${pct(sb.spread).slice(1)}/${pct(sa.spread).slice(1)}, n=${sb.n}/${sa.n})`,
      regression: worse,
      before: sb,
      after: sa,
      change,
    });
  }
  return { findings, compared };
}

function gpuSubject(t: GpuTopo): string {
  return `${t.node} gpu${t.gpu} (${t.product})`;
}

/** Profiles by name, placements by profile id; a name gone and a new one on the same id is a rename. */
export function compareTopology(before: GpuTopo[], after: GpuTopo[]): Finding[] {
  const out: Finding[] = [];
  const key = (t: GpuTopo) => `${t.node}\u0000${t.gpu}`;
  const afterBy = new Map(after.map((t) => [key(t), t]));
  for (const b of before) {
    const a = afterBy.get(key(b));
    if (!a) continue;
    const subject = gpuSubject(a);
    const add = (detail: string, regression: boolean) =>
      out.push({ area: "topology", subject, detail, regression });
    if (a.product !== b.product) add(`product ${b.product} → ${a.product}`, false);
    if (b.profiles && a.profiles) {
      const bn = new Map(b.profiles.map((p) => [p.name, p]));
      const an = new Map(a.profiles.map((p) => [p.name, p]));
      for (const [name, p] of bn) {
        const q = an.get(name);
        if (!q) {
          const renamed = a.profiles.find((x) => x.id === p.id && !bn.has(x.name));
          if (renamed) add(`profile ${name} (ID ${p.id}) renamed to ${renamed.name}`, true);
          else add(`profile ${name} (ID ${p.id}) removed`, true);
          continue;
        }
        if (q.memoryGiB !== p.memoryGiB)
          add(
            `profile ${name}: memory ${p.memoryGiB} → ${q.memoryGiB} GiB`,
            q.memoryGiB < p.memoryGiB,
          );
        if (q.sm !== p.sm) add(`profile ${name}: SMs ${p.sm} → ${q.sm}`, q.sm < p.sm);
        if (q.total !== p.total)
          add(`profile ${name}: max instances ${p.total} → ${q.total}`, q.total < p.total);
        if (q.id !== p.id) add(`profile ${name}: ID ${p.id} → ${q.id}`, true);
      }
      for (const [name, q] of an) {
        if (bn.has(name)) continue;
        const wasRenamed = b.profiles.some((x) => x.id === q.id && !an.has(x.name));
        if (!wasRenamed) add(`profile ${name} (ID ${q.id}) added`, false);
      }
    }
    if (b.placements && a.placements) {
      const ap = new Map(a.placements.map((p) => [p.profileId, p]));
      for (const p of b.placements) {
        const q = ap.get(p.profileId);
        if (!q) continue; // the profile's own finding says it went
        const gone = p.starts.filter((s) => !q.starts.includes(s));
        const added = q.starts.filter((s) => !p.starts.includes(s));
        if (gone.length || added.length || q.size !== p.size) {
          add(
            `profile ID ${p.profileId} placements {${p.starts.join(",")}}:${p.size} → {${q.starts.join(",")}}:${q.size}`,
            gone.length > 0 || q.size !== p.size,
          );
        }
      }
    }
    // GI ids are only comparable when the same layout was applied: the ids follow creation order.
    if (b.layout !== null && b.layout === a.layout) {
      const ids = (t: GpuTopo) =>
        t.instances
          .map((i) => `${i.profile}@${i.placement ?? "?"}=GI${i.gi ?? "?"}`)
          .sort()
          .join(" ");
      if (ids(b) !== ids(a)) add(`GI IDs ${ids(b) || "(none)"} → ${ids(a) || "(none)"}`, false);
    }
  }
  return out;
}

export function compareBehaviour(before: Snapshot, after: Snapshot, tolerance: number): Finding[] {
  const out: Finding[] = [];
  // Every check of every suite by its identity (suite, node, GPU, instance by profile and
  // placement, title): one that passed before and fails after is a behaviour regression.
  const ac = new Map(after.checks.map((c) => [c.identity, c]));
  for (const c of before.checks) {
    const w = ac.get(c.identity);
    if (!w || w.status === c.status) continue;
    out.push({
      area: "behaviour",
      subject: c.identity,
      detail: `${c.status} → ${w.status}${w.message ? `: ${w.message}` : ""}`,
      regression: c.status === "passed" && w.status === "failed",
    });
  }
  // Runs recorded before checks existed compare by their isolation verdicts.
  const vKey = (v: Snapshot["verdicts"][number]) => `${v.node} ${v.gpu ?? "-"} ${v.name}`;
  const av = new Map(after.verdicts.map((v) => [vKey(v), v]));
  const checked = before.checks.length > 0 && after.checks.length > 0;
  for (const v of checked ? [] : before.verdicts) {
    const w = av.get(vKey(v));
    if (!w || w.status === v.status) continue;
    out.push({
      area: "behaviour",
      subject: `${v.node} verdict ${v.name}`,
      detail: `${v.status} → ${w.status}: ${w.summary}`,
      regression: v.status === "passed",
    });
  }
  const mean = (rows: Snapshot["steps"]) => {
    const m = new Map<string, number[]>();
    for (const s of rows) {
      const k = `${s.node} gpu${s.gpu ?? "?"} ${s.step}`;
      m.set(k, [...(m.get(k) ?? []), s.ms]);
    }
    return new Map([...m].map(([k, v]) => [k, v.reduce((x, y) => x + y, 0) / v.length]));
  };
  const bs = mean(before.steps);
  const as = mean(after.steps);
  for (const [k, b] of bs) {
    const a = as.get(k);
    if (a === undefined || b === 0) continue;
    const change = (a - b) / b;
    if (Math.abs(change) <= tolerance || Math.abs(a - b) < STEP_FLOOR_MS) continue;
    out.push({
      area: "behaviour",
      subject: `${k} step`,
      detail: `${b.toFixed(0)} → ${a.toFixed(0)} ms ${pct(change)}`,
      regression: change > 0,
    });
  }
  return out;
}

export function diffSnapshots(before: Snapshot, after: Snapshot, tolerance = 0.05): DiffResult {
  const perf = comparePerformance(before.measurements, after.measurements, tolerance);
  const findings: Finding[] = [
    ...compareTopology(before.topology, after.topology),
    ...perf.findings,
    ...compareBehaviour(before, after, tolerance),
    ...compareObservations(before.observations, after.observations),
  ];
  return {
    tolerance,
    findings,
    compared: perf.compared,
    regressions: findings.filter((f) => f.regression).length,
  };
}
