// What the isolation checks of one GPU say, read back from their records: per scenario (an
// aggressor and a fault) the victims with their baseline and under-fault TFLOP/s (the
// victimsUnaffected check's figures `<label> baseline TFLOP/s`, `<label> under fault TFLOP/s`),
// and the verdicts' statuses, for the matrix (the "verified isolated" count is the coverage
// ledger's: src/verdicts/coverage.ts).

import { hasRole } from "../../util/suite-registry.js";
import { type CheckRecord, type CheckStatus, passKindOf } from "../../verdicts/checks.js";

export interface Scenario {
  fault: string;
  aggressor: string;
  victims: {
    label: string;
    baseline: number | null;
    underFault: number | null;
    /** This victim's share of the verdict: a failed scenario's victim that kept its
     * throughput and is not named in the failure stays passed. */
    status: CheckStatus | null;
    /** It died under the fault (figure `<label> died`): its throughput is no measurement. */
    died: boolean;
    /** Its p99 latency alone and under the fault, ms (the victimsLatencyUnaffected check's
     * figures `<label> baseline p99 ms`, `<label> under fault p99 ms`); null when not measured. */
    baselineP99Ms: number | null;
    underFaultP99Ms: number | null;
  }[];
  /** The victimsUnaffected check's status (null when it is missing). */
  victimsStatus: CheckStatus | null;
  /** The worst of the other verdicts (how the aggressor's own fault ended). */
  ownStatus: CheckStatus | null;
  /** Every verdict of the scenario passed. */
  allPassed: boolean;
  tolerance: number | null;
}

// Unlike the exit code's order (worstStatus), a verdict not assessed outranks a pass here: the
// matrix cell must not show a scenario as passed when part of it was never judged.
const RANK: Record<CheckStatus, number> = { passed: 0, skipped: 1, broken: 2, failed: 3 };
export const worst = (xs: readonly CheckStatus[]): CheckStatus | null =>
  xs.length ? xs.reduce((a, b) => (RANK[b] > RANK[a] ? b : a)) : null;

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

export function scenariosOf(checks: readonly CheckRecord[], node: string, gpu: number): Scenario[] {
  const mine = checks.filter((c) => hasRole(c.suite, "matrix") && c.node === node && c.gpu === gpu);
  const byKey = new Map<string, CheckRecord[]>();
  for (const c of mine) {
    const aggressor = c.parameters.aggressor ?? c.instance?.label;
    if (!aggressor) continue;
    const key = `${c.parameters.fault ?? "?"}\u0000${aggressor}`;
    byKey.set(key, [...(byKey.get(key) ?? []), c]);
  }
  return [...byKey].map(([key, list]) => {
    const [fault, aggressor] = key.split("\u0000") as [string, string];
    const v = list.find((c) => (c.parameters.verdict ?? c.title).endsWith("victimsUnaffected"));
    const lat = list.find((c) =>
      (c.parameters.verdict ?? c.title).endsWith("victimsLatencyUnaffected"),
    );
    const victims: Scenario["victims"] = [];
    for (const [k, val] of Object.entries(v?.figures ?? {})) {
      const m = /^(.+) baseline TFLOP\/s$/.exec(k);
      if (!m) continue;
      const label = m[1]!;
      const baseline = num(val);
      const underFault = num(v?.figures[`${label} under fault TFLOP/s`]);
      const tol = num(v?.figures.tolerance) ?? 0;
      const slowed = baseline && underFault !== null ? underFault / baseline < 1 - tol : false;
      const named = v ? ` ${v.message} `.includes(` ${label} `) : false;
      victims.push({
        label,
        baseline,
        underFault,
        status: v?.status === "failed" && !slowed && !named ? "passed" : (v?.status ?? null),
        died: v?.figures[`${label} died`] === true,
        baselineP99Ms: num(lat?.figures[`${label} baseline p99 ms`]),
        underFaultP99Ms: num(lat?.figures[`${label} under fault p99 ms`]),
      });
    }
    const others = list.filter((c) => c !== v).map((c) => c.status);
    return {
      fault,
      aggressor,
      victims,
      victimsStatus: v?.status ?? null,
      ownStatus: worst(others),
      // A soft route's characterisation passes, but it verifies no isolation.
      allPassed: list.every((c) => passKindOf(c) === "measured"),
      tolerance: num(v?.figures.tolerance),
    };
  });
}
