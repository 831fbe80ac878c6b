// A finished workload as a suite reads it: its status and the reason, its measurements, and the
// utilization sampled while it ran.
import type { InstanceOutcome } from "../workloads/launcher.js";
import { statusOf } from "../workloads/summary.js";
import type { UtilizationResult } from "../workloads/utilization.js";
import type { SuiteInstance, WorkloadResult } from "./api-types.js";

export function resultOf(
  o: InstanceOutcome,
  view: SuiteInstance,
  util: UtilizationResult | null = null,
): WorkloadResult {
  const st = statusOf(o);
  const reason =
    o.harnessError ??
    o.incomplete ??
    o.parseError ??
    (o.timedOut
      ? "killed at its deadline"
      : o.died
        ? `exit ${o.exitCode ?? o.signal}`
        : st === "failed"
          ? "it reported errors"
          : st === "broken"
            ? "it printed no figures"
            : (o.late ?? null));
  return {
    instance: view,
    workload: o.workload,
    status: st,
    reason,
    exitCode: o.exitCode,
    measurements: o.measurements.map((m) => ({ metric: m.metric, value: m.value, unit: m.unit })),
    metrics: Object.fromEntries(o.measurements.map((m) => [m.metric, m.value])),
    log: o.log,
    startMs: o.startMs,
    stopMs: o.stopMs,
    utilization: util
      ? {
          source: util.source,
          samples: util.samples.get(view.uuid)?.length ?? 0,
          problem: util.problem,
          insufficient: util.insufficient?.get(view.uuid) ?? null,
        }
      : null,
  };
}
