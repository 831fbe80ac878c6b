// Small helpers the built-in suites share. Users' suites may copy them: they use only the
// public API.
import {
  broken,
  type CheckHandle,
  current,
  fail,
  type ScenarioOutcome,
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
  // A pass whose exit reached the controller after its deadline, judged by the node's own
  // record of its end (judgeLateExit), says so: the only reason a passed workload carries.
  if (r.status === "passed" && r.reason) check.figures({ lateExit: r.reason });
  // How long it ran on the node's own clock: what the launch and the logins cost around it
  // shows against the check's window (the bench's phase overhead).
  if (r.nodeSpan)
    check.figures({
      nodeElapsedS: Math.round((r.nodeSpan.endS - r.nodeSpan.startS) * 1000) / 1000,
    });
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

type StepStatus = ScenarioOutcome["steps"][number]["status"];
const RANK: Record<StepStatus, number> = { passed: 0, skipped: 0, broken: 1, failed: 2 };

/** A scenario's steps as one verdict's test shows them: each step's own outcome, and the steps
 * this verdict judges with the verdict's status where that is worse (a victim slowed under
 * load fails "victims under load" in the victimsUnaffected test; no failed test shows only
 * green steps). */
export function stepsAsJudged(
  steps: ScenarioOutcome["steps"],
  v: VerdictView | undefined,
): ScenarioOutcome["steps"] {
  return steps.map((s) => {
    const status =
      v && (s.judgedBy ?? []).includes(v.title) && RANK[v.status] > RANK[s.status]
        ? v.status
        : s.status;
    return { ...s, status };
  });
}

/** Records a scenario's steps on the running check, as judged by its verdict. */
export function scenarioSteps(
  check: CheckHandle,
  steps: ScenarioOutcome["steps"],
  v: VerdictView | undefined,
): void {
  for (const s of stepsAsJudged(steps, v)) check.phase(s.name, s.startMs, s.stopMs, s.status);
}
