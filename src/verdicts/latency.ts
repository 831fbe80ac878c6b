// victimsLatencyUnaffected (issue 22 item 3): did the victims' request latency stay what it was
// alone while the aggressor faulted. The victims' serve (workloads/serve.cu) runs in a window of
// its own (src/chaos/fault-scenario.ts latencyWindow): alone for the baseline (`serve-baseline`),
// then beside the aggressor's fault struck again (`serve`, the aggressor's `serve-fault`). The
// figure judged is p99, the tail a tenant's SLO is written against, per interval: the mean of
// the fault window's interval p99s against the baseline's, allowed the tolerance, the baseline's
// own spread on a difference of two means (victims.ts does the same for throughput), or
// LATENCY_FLOOR_MS, whichever is largest. Disturbed or missing samples are broken, never a pass.
// A soft route (time-slicing, MPS) promises no latency: routes.ts characterises it, with the
// figure. Pure.
import type { ChaosEvent } from "../chaos/history.js";
import { faultMissedVictims } from "./fault-timing.js";
import {
  attemptOf,
  brokenByLoss,
  completions,
  DEFAULT_TOLERANCE,
  MIN_SAMPLES,
  mean,
  pct,
  type ScenarioRef,
  SPREAD_K,
  sd,
  tailOf,
  type VerdictOptions,
  verdict,
} from "./measure.js";
import type { Verdict } from "./types.js";

export const LATENCY_VERDICT = "victimsLatencyUnaffected";

/** The smallest p99 rise judged real, ms: a request's latency is read with the host's clock and
 * a blocking-sync wake-up, whose jitter on a quiet host is tens of microseconds; a tail on a
 * sub-millisecond request cannot be told apart finer than this. */
export const LATENCY_FLOOR_MS = 0.05;

type Figures = Verdict["evidence"]["figures"];

const p99sOf = (e: ChaosEvent) => (e.data.latencySamples ?? []).map((x) => x.p99Ms);

/** Why a serve window cannot be a measurement, or null when it can. */
function unusable(e: ChaosEvent): string | null {
  const d = e.data;
  if (d.incomplete) return `did not run its whole duration (${d.incomplete})`;
  if (e.type !== "ok")
    return d.timedOut ? "was killed at its deadline" : `exited ${d.exitCode ?? d.signal}`;
  const n = p99sOf(e).length;
  if (n < MIN_SAMPLES)
    return `printed ${n} latency sample(s), fewer than the ${MIN_SAMPLES} a spread needs`;
  return null;
}

/** The attempt judged: the last one whose fault window ran serve. */
function lastAttempt(h: readonly ChaosEvent[], ref: ScenarioRef): number {
  return Math.max(1, ...completions(h, ref.scenario, "serve").map(attemptOf));
}

/** Its own re-measured baseline, else the latest usable attempt of the shared one. */
function baselinesOf(h: readonly ChaosEvent[], ref: ScenarioRef, attempt: number): ChaosEvent[] {
  const own = completions(h, ref.scenario, "serve-baseline").filter(
    (e) => attemptOf(e) === attempt,
  );
  if (own.length > 0) return own;
  const shared = completions(h, ref.baseline, "serve-baseline");
  for (let a = Math.max(1, ...shared.map(attemptOf)); a >= 1; a--) {
    const at = shared.filter((e) => attemptOf(e) === a);
    if (a === 1 || (at.length > 0 && at.every((e) => unusable(e) === null))) return at;
  }
  return [];
}

interface Compared {
  ratio: number;
  rise: string | null;
}

/** One victim's fault window against its baseline; figures are written into `f`. */
function compare(v: string, base: ChaosEvent, load: ChaosEvent, tol: number, f: Figures): Compared {
  const bs = p99sOf(base);
  const ls = p99sOf(load);
  const mb = mean(bs);
  const ml = mean(ls);
  const noise = SPREAD_K * sd(bs) * Math.sqrt(1 / bs.length + 1 / ls.length);
  const allowed = Math.max(tol * mb, noise, LATENCY_FLOOR_MS);
  const ratio = mb > 0 ? ml / mb : Number.POSITIVE_INFINITY;
  f[`${v} baseline p99 ms`] = Number(mb.toFixed(4));
  f[`${v} under fault p99 ms`] = Number(ml.toFixed(4));
  if (base.data.p50Ms !== undefined) f[`${v} baseline p50 ms`] = base.data.p50Ms;
  if (load.data.p50Ms !== undefined) f[`${v} under fault p50 ms`] = load.data.p50Ms;
  if (load.data.rps !== undefined) f[`${v} under fault requests/s`] = load.data.rps;
  f[`${v} p99 rise`] = Number(ratio.toFixed(3));
  f[`${v} allowed p99 rise ms`] = Number(allowed.toFixed(4));
  f[`${v} latency baseline samples`] = bs.length;
  f[`${v} latency samples under fault`] = ls.length;
  const rise =
    ml - mb > allowed
      ? `${v}'s p99 rose to ${ml.toFixed(3)} ms from ${mb.toFixed(3)} ms alone (×${ratio.toFixed(2)}; mean of ${ls.length} vs ${bs.length} interval p99s ±${sd(bs).toFixed(3)}; allowed +${allowed.toFixed(3)} ms, tolerance ${pct(tol)})`
      : null;
  return { ratio, rise };
}

/** A victim's serve that did not end well under the fault: a death or a serve that stopped
 * answering is hard; a deadline overrun by the control machine, or one the node's CPU starvation
 * explains (workloads/completion.ts starvedAtDeadline), disturbs the measurement. */
function endedBadly(load: ChaosEvent): { hard: boolean; why: string } {
  const v = load.instance;
  const d = load.data;
  const last = d.latencySamples?.at(-1)?.t ?? 0;
  // Killed at its deadline with its figures at their end: the deadline was overrun by the
  // control machine, not missed by a serve that stopped answering.
  if (d.timedOut && last >= (d.durationS ?? Infinity) - 0.06)
    return { hard: false, why: `${v}'s serve was killed at an overrun deadline` };
  if (d.starved)
    return { hard: false, why: `${v}'s serve was killed at its deadline: ${d.starved}` };
  return {
    hard: true,
    why: d.timedOut
      ? `${v}'s serve stopped answering and was killed at its deadline`
      : `${v}'s serve died under the fault (exit ${d.exitCode ?? d.signal})`,
  };
}

export function victimsLatencyUnaffected(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions = {},
): Verdict {
  const lost = brokenByLoss(LATENCY_VERDICT, h, ref);
  if (lost) return lost;
  const tol = o.tolerance ?? DEFAULT_TOLERANCE;
  const attempt = lastAttempt(h, ref);
  const loads = completions(h, ref.scenario, "serve").filter((e) => attemptOf(e) === attempt);
  const f: Figures = { tolerance: tol, "latency floor ms": LATENCY_FLOOR_MS };
  const broken = (why: string, lines: string[] = []) =>
    verdict(LATENCY_VERDICT, "broken", why, f, lines);
  if (loads.length === 0) return broken("no victim's latency was measured during the fault");
  const bases = baselinesOf(h, ref, attempt);
  const hard: string[] = [];
  const rises: string[] = [];
  const disturbed: string[] = [];
  const lines: string[] = [];
  let worst = 1;
  for (const load of loads) {
    const v = load.instance;
    const base = bases.find((b) => b.instance === v);
    const baseWhy = base ? unusable(base) : "none was measured";
    if (!base || baseWhy)
      return broken(
        `${v}: no baseline latency to compare with: ${baseWhy}`,
        base ? tailOf(base.data) : [],
      );
    if ((load.data.errors ?? 0) > 0)
      hard.push(`${v} answered ${load.data.errors} request(s) wrong`);
    for (const e of load.data.cudaErrors ?? []) hard.push(`${v} got a CUDA error: ${e.kind}`);
    const why = unusable(load);
    if (why && load.type !== "ok" && !load.data.incomplete) {
      const ended = endedBadly(load);
      (ended.hard ? hard : disturbed).push(ended.why);
      if (ended.hard) lines.push(...tailOf(load.data));
      continue;
    }
    if (why) {
      disturbed.push(`${v}'s serve under the fault ${why}`);
      lines.push(...tailOf(load.data));
      continue;
    }
    const c = compare(v, base, load, tol, f);
    worst = Math.max(worst, c.ratio);
    if (c.rise) rises.push(c.rise);
  }
  if (hard.length > 0)
    return verdict(LATENCY_VERDICT, "failed", [...hard, ...rises].join("; "), f, lines);
  const aggressor = completions(h, ref.scenario, "serve-fault").find(
    (e) => attemptOf(e) === attempt,
  );
  const missed =
    ref.fault === "exclusive" || ref.fault === "tenants"
      ? null
      : faultMissedVictims(ref.fault, aggressor, loads);
  if (missed) disturbed.push(missed);
  if (disturbed.length > 0)
    return broken(`the latency measurement was disturbed: ${disturbed.join("; ")}`, lines);
  if (rises.length > 0) return verdict(LATENCY_VERDICT, "failed", rises.join("; "), f, lines);
  f["worst p99 rise"] = Number(worst.toFixed(3));
  return verdict(
    LATENCY_VERDICT,
    "passed",
    `${loads.length} victim(s) kept their latency; worst p99 ×${worst.toFixed(2)} of baseline`,
    f,
  );
}

/** A soft route's latency verdict, as what it is: the tail its sharing costs, with the figure.
 * Broken stays broken (a disturbed measurement characterises nothing). */
export function characteriseLatency(v: Verdict, routeText: string, promise: string): Verdict {
  if (v.status === "broken") return v;
  const rises = Object.entries(v.evidence.figures)
    .filter(([k, x]) => k.endsWith(" p99 rise") && typeof x === "number")
    .map(([, x]) => x as number);
  const worst = rises.length ? Math.max(...rises) : null;
  const what =
    v.status === "passed"
      ? `the victims kept their latency${worst !== null ? ` (p99 ×${worst.toFixed(2)})` : ""}`
      : /died|CUDA error|wrong|stopped answering/.test(v.summary)
        ? `the aggressor's fault reached the victim's requests (${v.summary})`
        : `a faulting neighbour raises the victim's p99 ×${(worst ?? 1).toFixed(1)}`;
  return {
    ...v,
    status: "passed",
    kind: "characterised",
    summary: `${routeText}: ${what}; expected for the soft route (it ${promise})`,
    evidence: {
      ...v.evidence,
      figures: { ...v.evidence.figures, expectedWeakness: v.status === "failed", route: routeText },
    },
  };
}
