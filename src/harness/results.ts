// A finished workload as a suite reads it: its status and the reason, its measurements, and the
// utilization sampled while it ran; and a suite's wrap of the workload's argv as the launcher
// calls it.
import { SlicecheckError } from "../errors.js";
import type { Instance } from "../workloads/instances.js";
import type { InstanceOutcome } from "../workloads/launcher.js";
import { statusOf } from "../workloads/summary.js";
import type { UtilizationResult } from "../workloads/utilization.js";
import type { SuiteInstance, WorkloadResult, WorkloadWrap } from "./api-types.js";

export function resultOf(
  o: InstanceOutcome,
  view: SuiteInstance,
  util: UtilizationResult | null = null,
): WorkloadResult {
  const st = statusOf(o);
  const reason =
    o.harnessError ??
    o.starved ??
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
    nodeSpan: o.nodeSpan ?? null,
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

/** A suite's wrap (over its instance views) as the launcher calls it (over instances). */
export function wrapFor(list: readonly SuiteInstance[], wrap: WorkloadWrap) {
  return (i: Instance, program: string, args: readonly string[]): string[] => {
    const view = list.find((v) => v.uuid === i.uuid);
    if (!view) throw new SlicecheckError("INTERNAL", `${i.node}: ${i.uuid} is not in the batch`);
    return wrap(view, program, args);
  };
}
