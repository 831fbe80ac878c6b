// victimsUnaffected: did the victims keep their throughput (against their own baseline, within
// the tolerance or the baseline's noise) and their memory while the aggressor faulted. A failure
// that noise could explain is measured once more before it stands. Pure.
import type { ChaosEvent } from "../chaos/history.js";
import { faultMissedVictims } from "./fault-timing.js";
import {
  attemptOf,
  baselinesFor,
  brokenByLoss,
  completions,
  DEFAULT_TOLERANCE,
  deadlineOverrun,
  harnessLoss,
  mean,
  pct,
  type ScenarioRef,
  SPREAD_K,
  STALL_MS,
  samplesOf,
  sd,
  spoiled,
  tailOf,
  type VerdictOptions,
  verdict,
} from "./measure.js";
import type { Verdict } from "./types.js";

interface VictimJudgement {
  verdict: Verdict;
  /** Failed only for reasons noise could explain (slower, stopped): worth a re-measure. */
  soft: boolean;
}

function judgeVictims(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions,
  attempt: number,
): VictimJudgement {
  const name = "victimsUnaffected";
  const broken = (
    why: string,
    figures: Verdict["evidence"]["figures"] = {},
    lines: string[] = [],
  ) => ({
    verdict: verdict(name, "broken", why, figures, lines),
    soft: false,
  });
  const tol = o.tolerance ?? DEFAULT_TOLERANCE;
  const loads = completions(h, ref.scenario, "load").filter((e) => attemptOf(e) === attempt);
  if (loads.length === 0) return broken("no victim ran during the fault");
  const baselines = baselinesFor(h, ref, attempt);
  const figures: Verdict["evidence"]["figures"] = { tolerance: tol };
  const hard: string[] = [];
  const soft: string[] = [];
  const disturbed: string[] = [];
  const logLines: string[] = [];
  let worst = Number.POSITIVE_INFINITY;
  let stall = 0;
  for (const load of loads) {
    const v = load.instance;
    const base = baselines.find((b) => b.instance === v);
    figures[`${v} baseline TFLOP/s`] = base?.data.tflops ?? null;
    figures[`${v} under fault TFLOP/s`] = load.data.tflops ?? null;
    stall = Math.max(stall, load.data.controllerStallMs ?? 0, base?.data.controllerStallMs ?? 0);
    if (!base)
      return broken(`${v}: no baseline throughput to compare with (none was measured)`, figures);
    const baseWhy =
      spoiled(base) ??
      deadlineOverrun(base) ??
      (base.type !== "ok"
        ? base.data.timedOut
          ? "it was killed at its deadline"
          : `it exited ${base.data.exitCode ?? base.data.signal}`
        : null);
    if (baseWhy || !(base.data.tflops !== undefined && base.data.tflops > 0))
      return broken(
        `${v}: no baseline throughput to compare with: ${baseWhy ?? "it reported none"}`,
        figures,
        tailOf(base.data),
      );
    const bs = samplesOf(base.data);
    const why = spoiled(load);
    if (why) {
      disturbed.push(`${v}'s stress under the fault ${why}`);
      logLines.push(...tailOf(load.data));
      continue;
    }
    if (load.type !== "ok") {
      const overrun = deadlineOverrun(load);
      if (overrun) disturbed.push(`${v} was ${overrun}`);
      else if (load.data.timedOut) {
        const last = load.data.samples?.at(-1)?.t;
        soft.push(
          `${v} stopped progressing${last !== undefined ? ` after ${last.toFixed(1)} s of ${load.data.durationS ?? "?"} s` : ""} and was killed at its deadline`,
        );
      } else {
        hard.push(`${v} died (exit ${load.data.exitCode ?? load.data.signal})`);
        // Whatever it printed before dying is no throughput: the pictures show it died.
        figures[`${v} died`] = true;
      }
      logLines.push(...tailOf(load.data));
    }
    for (const e of load.data.cudaErrors ?? []) {
      hard.push(`${v} got a CUDA error: ${e.kind}`);
      logLines.push(e.message);
    }
    if ((load.data.errors ?? 0) > 0) hard.push(`${v} computed ${load.data.errors} wrong result(s)`);
    if (load.type !== "ok") continue;
    const ls = samplesOf(load.data);
    const mb = mean(bs);
    const ml = mean(ls);
    // The throughput the victim had alone is known only as well as its samples agree: the
    // allowed drop is the tolerance or the baseline's own noise on a difference of two means,
    // whichever is larger, so that a noisy baseline is never read as a slowdown.
    const noise = SPREAD_K * sd(bs) * Math.sqrt(1 / bs.length + 1 / ls.length);
    const allowed = Math.max(tol * mb, noise);
    const ratio = ml / mb;
    worst = Math.min(worst, ratio);
    figures[`${v} ratio`] = Number(ratio.toFixed(4));
    figures[`${v} baseline samples`] = bs.length;
    figures[`${v} samples under fault`] = ls.length;
    figures[`${v} baseline spread TFLOP/s`] = Number(sd(bs).toFixed(4));
    figures[`${v} allowed drop`] = Number((allowed / mb).toFixed(4));
    if (ml > 0) figures[`${v} slowdown`] = Number((mb / ml).toFixed(3));
    if (mb - ml > allowed)
      soft.push(
        `${v} ran at ${pct(ratio)} of its baseline (mean of ${ls.length} samples ${ml.toFixed(2)} vs ${bs.length} baseline samples ${mb.toFixed(2)} TFLOP/s ±${sd(bs).toFixed(2)}; allowed ${pct(allowed / mb)}, tolerance ${pct(tol)})`,
      );
  }
  const memchecks = completions(h, ref.scenario, "memcheck").filter(
    (e) => attemptOf(e) === attempt,
  );
  if (ref.fault === "oom" && hard.length === 0 && disturbed.length === 0)
    disturbed.push(...memcheckTiming(h, ref, attempt, loads, memchecks.length));
  for (const m of memchecks) {
    const failedChecks = (m.data.checks ?? []).filter((c) => !c).length;
    figures[`${m.instance} memory checks failed`] = failedChecks;
    if (m.data.incomplete) disturbed.push(`${m.instance}'s memory check ${m.data.incomplete}`);
    else if (m.type !== "ok" || failedChecks > 0 || (m.data.checks ?? []).length === 0) {
      hard.push(`${m.instance} could not allocate its memory after the aggressor's OOM`);
      logLines.push(...tailOf(m.data));
    }
  }
  if (stall > 0) figures["controller stall ms"] = stall;
  const util = completions(h, ref.scenario, "utilization").find((e) => attemptOf(e) === attempt);
  for (const [v, u] of Object.entries(util?.data.utilization?.victims ?? {})) {
    if (u.smActiveMean !== null) figures[`${v} SM active % under fault`] = u.smActiveMean;
    if (u.memUsedMaxMiB !== null) figures[`${v} memory used MiB under fault`] = u.memUsedMaxMiB;
    // Sampled, but too little to be a measurement (judgeUtilization): labelled, no figure.
    if (u.samples > 0 && u.smActiveMean === null && u.memUsedMaxMiB === null)
      figures[`${v} utilization under fault`] = `insufficient (${u.samples} sample(s))`;
  }
  if (util?.data.utilization) figures["utilization source"] = util.data.utilization.source;
  if (hard.length > 0)
    return {
      verdict: verdict(name, "failed", [...hard, ...soft].join("; "), figures, logLines),
      soft: false,
    };
  disturbed.push(...faultMissed(h, ref, attempt, loads));
  if (disturbed.length > 0)
    return broken(`the measurement was disturbed: ${disturbed.join("; ")}`, figures, logLines);
  if (soft.length > 0) {
    if (stall >= STALL_MS)
      return broken(
        `the control machine stalled for ${(stall / 1000).toFixed(1)} s during the measurement, so this cannot be told from a slowdown: ${soft.join("; ")}`,
        figures,
        logLines,
      );
    return { verdict: verdict(name, "failed", soft.join("; "), figures, logLines), soft: true };
  }
  return {
    verdict: verdict(
      name,
      "passed",
      `${loads.length} victim(s) unaffected; worst at ${pct(worst === Number.POSITIVE_INFINITY ? 1 : worst)} of baseline`,
      figures,
    ),
    soft: false,
  };
}

/** Why the victims were not exposed to the fault (fault-timing.ts), as a disturbance. Judged
 * after the hard failures: a victim that died or erred fails whenever the fault struck, but a
 * pass or a slowdown counts only for victims that were running when it did. */
function faultMissed(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  attempt: number,
  loads: readonly ChaosEvent[],
): string[] {
  if (ref.fault === "exclusive" || ref.fault === "tenants") return [];
  const aggressor = completions(h, ref.scenario, "fault").find((e) => attemptOf(e) === attempt);
  const why = faultMissedVictims(ref.fault, aggressor, loads);
  return why ? [why] : [];
}

/** Whether an OOM's memory check ran in its window: after the victims' load, while the
 * aggressor still held the memory. */
function memcheckTiming(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  attempt: number,
  loads: readonly ChaosEvent[],
  ran: number,
): string[] {
  const lastLoad = Math.max(...loads.map((e) => Date.parse(e.time)));
  const released = completions(h, ref.scenario, "fault").find((e) => attemptOf(e) === attempt);
  const invokes = h.filter(
    (e) =>
      e.data.scenario === ref.scenario &&
      e.op === "memcheck" &&
      e.type === "invoke" &&
      attemptOf(e) === attempt,
  );
  if (ran === 0) return ["the victims' memory check did not run"];
  if (invokes.some((e) => Date.parse(e.time) < lastLoad))
    return ["the memory check overlapped the victims' load window"];
  if (released && invokes.some((e) => Date.parse(e.time) > Date.parse(released.time)))
    return [
      "the memory check started after the aggressor had released its memory (the control machine was too slow to check in time)",
    ];
  return [];
}

/** Why the scenario's first measurement should be taken again before it fails, or null. */
export function remeasureReason(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions = {},
): string | null {
  if (harnessLoss(h, ref)) return null;
  if (completions(h, ref.scenario, "load").some((e) => attemptOf(e) > 1)) return null;
  const j = judgeVictims(h, ref, o, 1);
  return j.soft ? j.verdict.summary : null;
}

export function victimsUnaffected(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions = {},
): Verdict {
  const lost = brokenByLoss("victimsUnaffected", h, ref);
  if (lost) return lost;
  const first = judgeVictims(h, ref, o, 1);
  const retried = completions(h, ref.scenario, "load").some((e) => attemptOf(e) === 2);
  if (!retried) return first.verdict;
  // Failed once for reasons noise could explain, measured again: the second measurement
  // decides, and the first stays in the evidence.
  const second = judgeVictims(h, ref, o, 2).verdict;
  const figures = { ...second.evidence.figures };
  for (const [k, v] of Object.entries(first.verdict.evidence.figures))
    if (k !== "tolerance") figures[`first attempt: ${k}`] = v;
  figures.remeasured = true;
  return verdict(
    second.name,
    second.status,
    `${second.status === "passed" ? "re-measured and unaffected" : "re-measured"}: ${second.summary} (first measurement: ${first.verdict.summary})`,
    figures,
    [...second.evidence.logLines, ...first.verdict.evidence.logLines],
  );
}
