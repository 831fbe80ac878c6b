// Observations (`slicecheck observe`) in the records: a run whose measurements are of suite and
// workload `observe`, one set of figures per GPU and GPU instance (busy_mean, under50_share, …)
// and the raw samples (sample_busy, sample_memory_used, repetition = the sample's number). diff
// compares two of them per GPU (and per GI by profile and placement, as GI ids follow creation
// order): how busy the cards were before slicing and after. A change of utilization is shown,
// never a regression: it says what the tenants did, not whether the node kept a promise.
import type { Store } from "./store.js";

export const OBSERVE_SUITE = "observe";

/** A diff finding (diff.ts's Finding, area `utilization`), never a regression. */
export interface UtilizationFinding {
  area: "utilization";
  subject: string;
  detail: string;
  regression: false;
}

export interface ObservationRow {
  node: string;
  gpu: number;
  product: string;
  profile: string;
  placement: string | null;
  metric: string;
  value: number;
  unit: string;
}

/** The figures (not the raw samples) an observation recorded for one node of one run. */
export function observationRows(db: Store, runId: string, node: string): Promise<ObservationRow[]> {
  return db.all<ObservationRow>(
    `SELECT m.node AS node, g.idx AS gpu, m.product AS product, m.profile AS profile,
        m.placement AS placement, m.metric AS metric, m.value AS value, m.unit AS unit
       FROM measurements m JOIN gpus g ON g.run_id = m.run_id AND g.uuid = m.gpu_uuid
       WHERE m.run_id = ? AND m.node = ? AND m.suite = ? AND m.metric NOT IN ('sample_busy', 'sample_memory_used')
       ORDER BY m.id`,
    [runId, node, OBSERVE_SUITE],
  );
}

/** The figures diff shows, in the order it shows them. */
const SHOWN: readonly { metric: string; name: string; unit: string }[] = [
  { metric: "busy_mean", name: "busy mean", unit: "%" },
  { metric: "under50_share", name: "under 50 % busy", unit: "% of the time" },
  { metric: "idle_share", name: "idle", unit: "% of the time" },
  { metric: "memory_used_mean", name: "memory in use", unit: "MiB" },
];

/** A busy or time share that moved less than this many points is no change worth a line: a
 * tenant's readings jitter by more than 5 points between two short observations of the same
 * load, and slicing's effect (the seed's 40 % → 70–85 %) is tens of points. Memory: this many
 * percent of what the unit offers. */
export const CHANGE_POINTS = 10;

type Unit = Map<string, number>;

function units(rows: readonly ObservationRow[]): Map<string, { subject: string; figures: Unit }> {
  const out = new Map<string, { subject: string; figures: Unit }>();
  for (const r of rows) {
    const at = r.profile === "whole-gpu" ? "" : ` ${r.profile}@${r.placement ?? "?"}`;
    const key = `${r.node}\u0000${r.gpu}\u0000${at}`;
    const u = out.get(key) ?? {
      subject: `${r.node} GPU ${r.gpu} (${r.product})${at || " whole GPU"}`,
      figures: new Map(),
    };
    u.figures.set(r.metric, Number(r.value));
    out.set(key, u);
  }
  return out;
}

const fmt = (v: number | undefined) => (v === undefined ? "–" : String(Number(v.toFixed(1))));

function changed(b: Unit, a: Unit): boolean {
  return SHOWN.some(({ metric }) => {
    const x = b.get(metric);
    const y = a.get(metric);
    if (x === undefined || y === undefined) return x !== y;
    if (metric !== "memory_used_mean") return Math.abs(y - x) >= CHANGE_POINTS;
    const offered = a.get("memory_offered") ?? b.get("memory_offered") ?? Math.max(x, y, 1);
    return (100 * Math.abs(y - x)) / offered >= CHANGE_POINTS;
  });
}

/** One finding per GPU or GI whose utilization moved (or that was observed on one side only). */
export function compareObservations(
  before: readonly ObservationRow[],
  after: readonly ObservationRow[],
): UtilizationFinding[] {
  const b = units(before);
  const a = units(after);
  const out: UtilizationFinding[] = [];
  for (const key of [...new Set([...b.keys(), ...a.keys()])].sort()) {
    const x = b.get(key);
    const y = a.get(key);
    const subject = (x ?? y)!.subject;
    const detail = (f: (m: string) => string) =>
      SHOWN.map((s) => `${s.name} ${f(s.metric)} ${s.unit}`).join(", ");
    if (!x || !y) {
      const only = (x ?? y)!.figures;
      out.push({
        area: "utilization",
        subject,
        detail: `observed ${x ? "before, not after" : "after, not before"}: ${detail((m) => fmt(only.get(m)))}`,
        regression: false,
      });
      continue;
    }
    if (!changed(x.figures, y.figures)) continue;
    out.push({
      area: "utilization",
      subject,
      detail: detail((m) => `${fmt(x.figures.get(m))} → ${fmt(y.figures.get(m))}`),
      regression: false,
    });
  }
  return out;
}
