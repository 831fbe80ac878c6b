// The `regression` suite: this run's measurements against the latest run of the same nodes on
// another driver in the records database, through the same snapshot and comparison as `diff`.
// In the store layer: it reads the records database (baselines are the store's).

import { VERDICT_SUITE } from "../util/suite-registry.js";
import type { ExtraCheck } from "../verdicts/checks.js";
import { comparePerformance } from "./diff.js";
import { type MeasurementRow, snapshot } from "./query.js";
import type { Store } from "./store.js";

export const NO_BASELINE = "no baseline on another driver yet";

const key = (m: MeasurementRow) => `${m.product} ${m.profile} ${m.workload} ${m.metric}`;

export async function regressionChecks(
  db: Store,
  runId: string,
  tolerance = 0.05,
): Promise<ExtraCheck[]> {
  const after = await snapshot(db, runId);
  const before: MeasurementRow[] = [];
  const baselines: string[] = [];
  for (const p of after.picked) {
    if (!p.driver) continue;
    const prev = await db.get<{ driver: string }>(
      `SELECT n.driver AS driver FROM runs r JOIN nodes n ON n.run_id = r.id
       WHERE n.node = ? AND r.id <> ? AND n.driver IS NOT NULL AND n.driver <> ?
       ORDER BY r.started DESC, r.seq DESC LIMIT 1`,
      [p.node, runId, p.driver],
    );
    if (!prev) continue;
    // The latest run on that driver per node, as `diff --before DRIVER` picks it.
    const snap = await snapshot(db, prev.driver);
    const base = snap.picked.find((x) => x.node === p.node);
    if (!base) continue;
    baselines.push(`${p.node}: ${base.runId} (driver ${prev.driver}) → driver ${p.driver}`);
    before.push(...snap.measurements.filter((m) => m.node === p.node));
  }
  const afterRows = after.measurements.filter((m) => before.some((b) => b.node === m.node));
  const node = after.picked.map((p) => p.node).join(",") || "run";
  const compared = [...new Set(before.map(key))].filter((k) => afterRows.some((m) => key(m) === k));
  if (baselines.length === 0 || compared.length === 0)
    return [
      {
        suite: VERDICT_SUITE.regression,
        node,
        gpu: null,
        title: "measurements compared with another driver",
        status: "passed",
        message: baselines.length ? `${NO_BASELINE} (no common measurement)` : NO_BASELINE,
        parameters: {},
        attachment: null,
      },
    ];
  const { findings } = comparePerformance(before, afterRows, tolerance);
  return compared.sort().map((k) => {
    const f = findings.find((x) => x.subject === k);
    const bad = f?.regression ?? false;
    return {
      suite: VERDICT_SUITE.regression,
      node,
      gpu: null,
      title: `${k} holds across drivers`,
      status: bad ? ("failed" as const) : ("passed" as const),
      message: bad
        ? `driver regression: ${k}: ${f?.detail ?? ""}`
        : f
          ? `${k}: ${f.detail}`
          : `${k}: within ${(tolerance * 100).toFixed(0)} % and the samples' spread`,
      parameters: { baseline: baselines.join("; ") },
      attachment: null,
    };
  });
}
