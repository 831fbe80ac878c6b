// What the isolation verdicts share: the scenario reference, the reading of a history's windows
// (completions, attempts, a harness loss), and the statistics that say whether a window is a
// usable measurement. Pure.
import type { ChaosEvent, EventData, ScenarioRef } from "../chaos/history.js";
import type { Verdict, VerdictStatus } from "./types.js";

export const DEFAULT_TOLERANCE = 0.05;

/**
 * Xids after which the GPU needs a reset (reference workloads.md 4.4-4.5: the reset-class
 * errors that take the whole GPU); their presence in the log means recovery was not "without a
 * reset" even if the harness did not issue one.
 */
export const RESET_XIDS: ReadonlySet<number> = new Set([
  48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140,
]);

// The scenario reference is the history's (chaos runs scenarios and names them; verdicts read them).
export type { ScenarioRef } from "../chaos/history.js";

export interface VerdictOptions {
  /** Allowed relative throughput loss of a victim against its own baseline (0.05 = 5 %). */
  tolerance?: number;
  /** The faults whose victims' latency was measured (--latency-faults); the scenario runner's
   * default (chaos DEFAULT_LATENCY_FAULTS) when absent. */
  latencyFaults?: readonly string[];
}

/** Fewer interval samples than this in a window cannot give a spread: the window is spoiled. */
export const MIN_SAMPLES = 3;
/** A controller stall this long during a window makes a failure there undecidable. */
export const STALL_MS = 2000;
/** A difference of means beyond this many standard errors of the baseline's samples is real. */
export const SPREAD_K = 3;

export const attemptOf = (e: ChaosEvent) => e.data.attempt ?? 1;

export function verdict(
  name: string,
  status: VerdictStatus,
  summary: string,
  figures: Verdict["evidence"]["figures"] = {},
  logLines: string[] = [],
): Verdict {
  return { name, status, summary, evidence: { figures, logLines } };
}

export const completions = (h: readonly ChaosEvent[], scenario: string, op: ChaosEvent["op"]) =>
  h.filter((e) => e.data.scenario === scenario && e.op === op && e.type !== "invoke");

/** A harness-level loss anywhere in the scenario makes every verdict on it broken. */
export function harnessLoss(h: readonly ChaosEvent[], ref: ScenarioRef): ChaosEvent | undefined {
  return h.find(
    (e) =>
      (e.data.scenario === ref.scenario || e.data.scenario === ref.baseline) &&
      e.data.harnessError !== undefined,
  );
}

export function brokenByLoss(
  name: string,
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
): Verdict | null {
  const lost = harnessLoss(h, ref);
  if (!lost) return null;
  return verdict(
    name,
    "broken",
    `could not check: ${lost.op} on ${lost.instance}: ${lost.data.harnessError}`,
    {},
    [String(lost.data.harnessError)],
  );
}

export function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

export function tailOf(d: EventData): string[] {
  return d.tail ?? [];
}

export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function sd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
}

export const samplesOf = (d: EventData) => (d.samples ?? []).map((x) => x.tflops);

/** Why a window's stress cannot serve as a measurement, or null when it can. */
export function spoiled(e: ChaosEvent): string | null {
  const d = e.data;
  if (d.incomplete) return `did not run its whole duration (${d.incomplete})`;
  if (e.type !== "ok") return null;
  const n = samplesOf(d).length;
  if (n < MIN_SAMPLES)
    return `printed ${n} sample(s), fewer than the ${MIN_SAMPLES} a spread needs`;
  return null;
}

/** A stress killed at its deadline whose own clock reached (nearly) its end: the deadline was
 * overrun by the harness or the control machine, not missed by a hung workload. */
export function deadlineOverrun(e: ChaosEvent): string | null {
  const d = e.data;
  if (d.starved) return `killed at its deadline: ${d.starved}`;
  if (!d.timedOut || !d.durationS) return null;
  // The stress prints its last interval line once its own clock reaches its duration (t is
  // printed to 0.1 s): only a stress that got there was cut by the deadline rather than hung.
  const last = d.samples?.at(-1)?.t ?? 0;
  if (last >= d.durationS - 0.06)
    return `killed at its deadline although its figures reached ${last.toFixed(1)} s of ${d.durationS} s: the deadline was overrun (control machine slow), not missed by the workload`;
  return null;
}

/** The baseline of a scenario key at an attempt: why it cannot be compared with, or null. */
export function baselineProblem(
  h: readonly ChaosEvent[],
  key: string,
  attempt: number,
): string | null {
  const bs = completions(h, key, "baseline").filter((e) => attemptOf(e) === attempt);
  if (bs.length === 0) return "no baseline was measured";
  for (const b of bs) {
    if (b.data.harnessError) return null; // a lost node: broken by the loss, not re-measured
    const why =
      spoiled(b) ??
      deadlineOverrun(b) ??
      (b.type !== "ok"
        ? b.data.timedOut
          ? "was killed at its deadline"
          : `exited ${b.data.exitCode ?? b.data.signal}`
        : null);
    if (why) return `${b.instance}'s baseline ${why}`;
  }
  return null;
}

/** The baseline events an attempt compares with: its own re-measured baseline, else the
 * latest usable attempt of the aggressor's shared baseline. */
export function baselinesFor(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  attempt: number,
): ChaosEvent[] {
  const own = completions(h, ref.scenario, "baseline").filter((e) => attemptOf(e) === attempt);
  if (own.length > 0) return own;
  const shared = completions(h, ref.baseline, "baseline");
  const last = Math.max(1, ...shared.map(attemptOf));
  for (let a = last; a >= 1; a--)
    if (a === 1 || baselineProblem(h, ref.baseline, a) === null)
      return shared.filter((e) => attemptOf(e) === a);
  return shared.filter((e) => attemptOf(e) === 1);
}
