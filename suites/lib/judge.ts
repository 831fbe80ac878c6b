// Small helpers the built-in suites share. Users' suites may copy them: they use only the
// public API.
import {
  broken,
  type CheckHandle,
  current,
  fail,
  type VerdictView,
  type WorkloadResult,
} from "slicecheck/suite";

/** Broken (the harness could not decide) with this reason, when there is one. */
export function brokenIf(reason: string | null | undefined, code = "NODE_UNREADABLE"): void {
  if (reason) broken(code, reason);
}

/** A workload's figures, its time span and its log on the check. */
export function workloadFigures(check: CheckHandle, r: WorkloadResult): void {
  check.figures({ ...r.metrics, exitCode: r.exitCode, sm: r.instance.sm });
  // SM activity and memory in use while it ran (dcgmi dmon, else nvidia-smi's memory only).
  if (r.utilization)
    check.figures({
      utilizationSource: r.utilization.source,
      // Labelled, never shown as a measurement: the figures were left out of the record.
      utilizationStatus: r.utilization.insufficient
        ? "insufficient"
        : r.utilization.samples > 0
          ? "measured"
          : "not sampled",
      ...(r.utilization.insufficient
        ? { utilizationInsufficient: r.utilization.insufficient }
        : {}),
      ...(r.utilization.problem ? { utilizationProblem: r.utilization.problem } : {}),
    });
  check.window(r.startMs, r.stopMs);
  check.parameter("placement", r.instance.placement ?? "whole GPU");
  if (r.log) check.evidenceFile("workload log", r.log, "text/plain");
}

/** An engine's verdict as the running test's outcome: its figures, note and evidence on the
 * check, then failed with the verdict's own code (GPU_LOST…) or `failCode`, or broken with the
 * verdict's own code. */
export function judgeVerdict(v: VerdictView, failCode: string): void {
  const check = current();
  check.figures(v.figures);
  check.note(v.message);
  for (const e of v.evidence) check.evidence(e.name, e.content);
  if (v.status === "broken") brokenIf(v.message, v.code);
  if (v.status === "failed") fail(v.code && v.code !== "OK" ? v.code : failCode, v.message);
}
