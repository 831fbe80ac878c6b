// Isolation verdicts over one scenario's history (src/chaos/history.ts): did the victims keep
// their throughput and memory, did the aggressor fail the way its fault says, did the kernel log
// blame only the aggressor, and does the aggressor's instance work again without a GPU reset.
// Pure: the history is all they read, so a saved history.jsonl can be judged again.
import type { ChaosEvent, EventData, FaultName, ScenarioKind } from "../chaos/history.js";
import { parseLgi } from "../nvsmi/lgi.js";
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

/** The scenario being judged: its key, and its baseline's key (shared by the aggressor's faults). */
export interface ScenarioRef {
  scenario: string;
  baseline: string;
  fault: ScenarioKind;
  aggressor: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
}

export interface VerdictOptions {
  /** Allowed relative throughput loss of a victim against its own baseline (0.05 = 5 %). */
  tolerance?: number;
}

/** Fewer interval samples than this in a window cannot give a spread: the window is spoiled. */
export const MIN_SAMPLES = 3;
/** A controller stall this long during a window makes a failure there undecidable. */
export const STALL_MS = 2000;
/** A difference of means beyond this many standard errors of the baseline's samples is real. */
const SPREAD_K = 3;

const attemptOf = (e: ChaosEvent) => e.data.attempt ?? 1;

function verdict(
  name: string,
  status: VerdictStatus,
  summary: string,
  figures: Verdict["evidence"]["figures"] = {},
  logLines: string[] = [],
): Verdict {
  return { name, status, summary, evidence: { figures, logLines } };
}

const completions = (h: readonly ChaosEvent[], scenario: string, op: ChaosEvent["op"]) =>
  h.filter((e) => e.data.scenario === scenario && e.op === op && e.type !== "invoke");

/** A harness-level loss anywhere in the scenario makes every verdict on it broken. */
function harnessLoss(h: readonly ChaosEvent[], ref: ScenarioRef): ChaosEvent | undefined {
  return h.find(
    (e) =>
      (e.data.scenario === ref.scenario || e.data.scenario === ref.baseline) &&
      e.data.harnessError !== undefined,
  );
}

function brokenByLoss(name: string, h: readonly ChaosEvent[], ref: ScenarioRef): Verdict | null {
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

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function tailOf(d: EventData): string[] {
  return d.tail ?? [];
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function sd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
}

const samplesOf = (d: EventData) => (d.samples ?? []).map((x) => x.tflops);

/** Why a window's stress cannot serve as a measurement, or null when it can. */
function spoiled(e: ChaosEvent): string | null {
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
function deadlineOverrun(e: ChaosEvent): string | null {
  const d = e.data;
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
function baselinesFor(h: readonly ChaosEvent[], ref: ScenarioRef, attempt: number): ChaosEvent[] {
  const own = completions(h, ref.scenario, "baseline").filter((e) => attemptOf(e) === attempt);
  if (own.length > 0) return own;
  const shared = completions(h, ref.baseline, "baseline");
  const last = Math.max(1, ...shared.map(attemptOf));
  for (let a = last; a >= 1; a--)
    if (a === 1 || baselineProblem(h, ref.baseline, a) === null)
      return shared.filter((e) => attemptOf(e) === a);
  return shared.filter((e) => attemptOf(e) === 1);
}

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
      } else hard.push(`${v} died (exit ${load.data.exitCode ?? load.data.signal})`);
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
  if (ref.fault === "oom" && hard.length === 0 && disturbed.length === 0) {
    const lastLoad = Math.max(...loads.map((e) => Date.parse(e.time)));
    const released = completions(h, ref.scenario, "fault").find((e) => attemptOf(e) === attempt);
    const invokes = h.filter(
      (e) =>
        e.data.scenario === ref.scenario &&
        e.op === "memcheck" &&
        e.type === "invoke" &&
        attemptOf(e) === attempt,
    );
    if (memchecks.length === 0) disturbed.push("the victims' memory check did not run");
    else if (invokes.some((e) => Date.parse(e.time) < lastLoad))
      disturbed.push("the memory check overlapped the victims' load window");
    else if (released && invokes.some((e) => Date.parse(e.time) > Date.parse(released.time)))
      disturbed.push(
        "the memory check started after the aggressor had released its memory (the control machine was too slow to check in time)",
      );
  }
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
  if (hard.length > 0)
    return {
      verdict: verdict(name, "failed", [...hard, ...soft].join("; "), figures, logLines),
      soft: false,
    };
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

/** How the aggressor should end for each fault. */
const EXPECTED: Readonly<Record<FaultName, string>> = {
  oom: "an out-of-memory error",
  crash: "a CUDA illegal-address error and a non-zero exit",
  kill: "death by SIGKILL",
  hang: "being killed at its deadline",
  noisy: "running to the end",
};

export function faultContained(h: readonly ChaosEvent[], ref: ScenarioRef): Verdict {
  const name = "faultContained";
  const lost = brokenByLoss(name, h, ref);
  if (lost) return lost;
  const f = completions(h, ref.scenario, "fault")[0];
  if (!f) return verdict(name, "broken", "the aggressor's fault never completed");
  const d = f.data;
  const kinds = (d.cudaErrors ?? []).map((e) => e.kind);
  const figures = {
    exitCode: d.exitCode ?? null,
    signal: d.signal ?? null,
    timedOut: d.timedOut ?? false,
    oom: d.oom ?? null,
    cudaErrors: kinds.join(",") || null,
  };
  let ok: boolean;
  if (ref.fault === "exclusive") return verdict(name, "broken", "no fault in an exclusivity check");
  switch (ref.fault) {
    case "oom":
      ok = d.oom === true || kinds.includes("oom");
      break;
    case "crash":
      ok = kinds.includes("illegal-address") && d.exitCode !== 0;
      break;
    case "kill":
      ok = d.signal === "SIGKILL" || d.exitCode === 137;
      break;
    case "hang":
      ok = d.timedOut === true;
      break;
    case "noisy":
      ok = f.type === "ok";
      break;
  }
  const lines = [...(d.cudaErrors ?? []).map((e) => e.message), ...tailOf(d)];
  return ok
    ? verdict(name, "passed", `the aggressor ended with ${EXPECTED[ref.fault]}`, figures, lines)
    : verdict(
        name,
        "failed",
        `expected ${EXPECTED[ref.fault]}; got exit ${d.exitCode ?? "-"}${d.signal ? ` (${d.signal})` : ""}${d.timedOut ? ", timed out" : ""}${kinds.length ? `, ${kinds.join(", ")}` : ""}`,
        figures,
        lines,
      );
}

/** Faults the simulated (and real) driver reports with an Xid naming the faulting context. */
const XID_FAULTS: ReadonlySet<FaultName> = new Set(["crash"]);

export function xidAttributed(h: readonly ChaosEvent[], ref: ScenarioRef): Verdict {
  const name = "xidAttributed";
  const lost = brokenByLoss(name, h, ref);
  if (lost) return lost;
  const log = completions(h, ref.scenario, "dmesg")[0];
  if (log?.type !== "ok")
    return verdict(
      name,
      "broken",
      "the kernel log could not be read",
      {},
      tailOf(log?.data ?? { scenario: "" }),
    );
  // A re-measured scenario faulted twice: a wrong attribution in either is a failure.
  const xids = completions(h, ref.scenario, "dmesg").flatMap((e) => e.data.xids ?? []);
  const mine = (x: (typeof xids)[number]) =>
    x.gpuInstanceId === ref.gpuInstanceId &&
    (ref.computeInstanceId === null || x.computeInstanceId === ref.computeInstanceId);
  const wrong = xids.filter((x) => !mine(x));
  const figures = {
    xids: xids.length,
    attributedToAggressor: xids.length - wrong.length,
    attributedElsewhere: wrong.length,
    aggressor: `GI ${ref.gpuInstanceId ?? "-"} CI ${ref.computeInstanceId ?? "-"}`,
  };
  const lines = xids.map((x) => x.line);
  if (wrong.length > 0) {
    const where = wrong
      .map((x) => `Xid ${x.xid} on GI ${x.gpuInstanceId ?? "?"} CI ${x.computeInstanceId ?? "?"}`)
      .join(", ");
    return verdict(
      name,
      "failed",
      `the kernel log names another instance: ${where}`,
      figures,
      lines,
    );
  }
  if (ref.fault === "exclusive" || !XID_FAULTS.has(ref.fault)) {
    return verdict(
      name,
      "passed",
      xids.length
        ? `${xids.length} Xid(s), all on the aggressor`
        : `no Xid expected for ${ref.fault}, none logged`,
      figures,
      lines,
    );
  }
  if (xids.length === 0)
    return verdict(name, "failed", `no Xid was logged for the aggressor's ${ref.fault}`, figures);
  return verdict(
    name,
    "passed",
    `Xid ${[...new Set(xids.map((x) => x.xid))].join(",")} names the aggressor (GI ${ref.gpuInstanceId}, CI ${ref.computeInstanceId}) and no other instance`,
    figures,
    lines,
  );
}

export function recovered(h: readonly ChaosEvent[], ref: ScenarioRef): Verdict {
  const name = "recovered";
  const lost = brokenByLoss(name, h, ref);
  if (lost) return lost;
  const all = completions(h, ref.scenario, "recovery");
  // After a re-measure the aggressor recovered twice: the worse of the two is judged.
  const r = all.find((e) => e.type !== "ok" || (e.data.errors ?? 0) > 0) ?? all[0];
  if (!r) return verdict(name, "broken", "the recovery stress never completed");
  const resetXids = completions(h, ref.scenario, "dmesg")
    .flatMap((e) => e.data.xids ?? [])
    .filter((x) => RESET_XIDS.has(x.xid));
  const figures = {
    tflops: r.data.tflops ?? null,
    errors: r.data.errors ?? null,
    exitCode: r.data.exitCode ?? null,
    gpuReset: r.data.gpuReset ?? false,
    resetClassXids: resetXids.length,
  };
  if (r.data.gpuReset || resetXids.length > 0)
    return verdict(
      name,
      "failed",
      "the instance needed a GPU reset",
      figures,
      resetXids.map((x) => x.line),
    );
  if (
    r.type !== "ok" ||
    !(r.data.tflops !== undefined && r.data.tflops > 0) ||
    (r.data.errors ?? 0) > 0
  )
    return verdict(
      name,
      "failed",
      `the aggressor's instance did not run a stress again (exit ${r.data.exitCode ?? r.data.signal ?? "-"})`,
      figures,
      [...(r.data.cudaErrors ?? []).map((e) => e.message), ...tailOf(r.data)],
    );
  return verdict(
    name,
    "passed",
    `stress ran again at ${r.data.tflops.toFixed(2)} TFLOP/s without a GPU reset`,
    figures,
  );
}

/**
 * exclusive: a whole-card instance (one GI over the whole GPU). While its tenant ran, the GPU
 * held one GPU instance and no compute process but the tenant's own stress. A GPU the driver
 * could not list is broken, never passed.
 */
export function exclusivity(h: readonly ChaosEvent[], ref: ScenarioRef): Verdict {
  const name = "exclusive";
  const lost = brokenByLoss(name, h, ref);
  if (lost) return lost;
  const seen = completions(h, ref.scenario, "exclusivity")[0];
  const x = seen?.data.exclusivity;
  if (!seen || !x)
    return verdict(name, "broken", "the GPU's instances and processes were not read");
  if (x.lgiExit !== 0 || x.appsExit !== 0)
    return verdict(
      name,
      "broken",
      `nvidia-smi could not list the GPU (mig -lgi exit ${x.lgiExit}, --query-compute-apps exit ${x.appsExit})`,
      {},
      [x.lgi, x.apps].filter(Boolean),
    );
  let gis: number;
  try {
    gis = parseLgi(x.lgi).gpuInstances.length;
  } catch (e) {
    return verdict(name, "broken", `nvidia-smi mig -lgi: ${(e as Error).message}`, {}, [x.lgi]);
  }
  const apps = x.apps
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !/^No running/i.test(l))
    .map((l) => {
      const [pid = "", process = "", uuid = "", mem = ""] = l.split(",").map((c) => c.trim());
      return { pid, process, uuid, mem, line: l };
    });
  // The tenant is this run's stress; whatever else holds a context on the GPU shares the card.
  const others = apps.filter(
    (a) =>
      (a.uuid === "" || a.uuid === x.gpuUuid) && !/slicecheck-stress|(^|\/)stress$/.test(a.process),
  );
  const tenant = completions(h, ref.scenario, "load")[0];
  const figures = {
    gpuInstances: gis,
    computeProcesses: apps.length,
    foreignProcesses: others.length,
  };
  const lines = [x.lgi, x.apps];
  if (gis !== 1)
    return verdict(
      name,
      "failed",
      `the GPU holds ${gis} GPU instances, not the one whole-card instance`,
      figures,
      lines,
    );
  if (others.length > 0)
    return verdict(
      name,
      "failed",
      `another CUDA context shares the whole-card instance: ${others.map((a) => `pid ${a.pid} (${a.process}, ${a.mem})`).join(", ")}`,
      figures,
      lines,
    );
  if (!tenant || tenant.data.harnessError)
    return verdict(name, "broken", "the tenant's stress did not run", figures);
  if (tenant.type !== "ok" || tenant.data.incomplete)
    return verdict(
      name,
      "broken",
      `the tenant's stress did not run its whole duration (${tenant.data.incomplete ?? `exit ${tenant.data.exitCode ?? tenant.data.signal}`})`,
      figures,
      tailOf(tenant.data),
    );
  return verdict(
    name,
    "passed",
    "one GPU instance over the whole card and no CUDA context on the GPU but its tenant's",
    figures,
    lines,
  );
}

export function judgeScenario(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions = {},
): Verdict[] {
  return [
    victimsUnaffected(h, ref, o),
    faultContained(h, ref),
    xidAttributed(h, ref),
    recovered(h, ref),
  ];
}
