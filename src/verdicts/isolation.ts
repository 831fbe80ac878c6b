// Isolation verdicts over one scenario's history (src/chaos/history.ts): did the victims keep
// their throughput and memory, did the aggressor fail the way its fault says, did the kernel log
// blame only the aggressor, and does the aggressor's instance work again without a GPU reset.
// Pure: the history is all they read, so a saved history.jsonl can be judged again.
import type { ChaosEvent, EventData, FaultName } from "../chaos/history.js";
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
  fault: FaultName;
  aggressor: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
}

export interface VerdictOptions {
  /** Allowed relative throughput loss of a victim against its own baseline (0.05 = 5 %). */
  tolerance?: number;
}

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

export function victimsUnaffected(
  h: readonly ChaosEvent[],
  ref: ScenarioRef,
  o: VerdictOptions = {},
): Verdict {
  const name = "victimsUnaffected";
  const lost = brokenByLoss(name, h, ref);
  if (lost) return lost;
  const tol = o.tolerance ?? DEFAULT_TOLERANCE;
  const loads = completions(h, ref.scenario, "load");
  if (loads.length === 0) return verdict(name, "broken", "no victim ran during the fault");
  const baselines = completions(h, ref.baseline, "baseline");
  const figures: Verdict["evidence"]["figures"] = { tolerance: tol };
  const problems: string[] = [];
  const logLines: string[] = [];
  let worst = Number.POSITIVE_INFINITY;
  for (const load of loads) {
    const v = load.instance;
    const base = baselines.find((b) => b.instance === v);
    const bt = base?.data.tflops;
    const lt = load.data.tflops;
    figures[`${v} baseline TFLOP/s`] = bt ?? null;
    figures[`${v} under fault TFLOP/s`] = lt ?? null;
    if (bt === undefined || base?.type !== "ok" || bt <= 0)
      return verdict(name, "broken", `${v}: no baseline throughput to compare with`, figures);
    if (load.type !== "ok") {
      const why = load.data.timedOut
        ? "stopped progressing and was killed at its deadline"
        : `died (exit ${load.data.exitCode ?? load.data.signal})`;
      problems.push(`${v} ${why}`);
      logLines.push(...tailOf(load.data));
    }
    for (const e of load.data.cudaErrors ?? []) {
      problems.push(`${v} got a CUDA error: ${e.kind}`);
      logLines.push(e.message);
    }
    if ((load.data.errors ?? 0) > 0)
      problems.push(`${v} computed ${load.data.errors} wrong result(s)`);
    if (lt === undefined) {
      if (load.type === "ok") problems.push(`${v} reported no throughput`);
    } else {
      const ratio = lt / bt;
      worst = Math.min(worst, ratio);
      figures[`${v} ratio`] = Number(ratio.toFixed(4));
      if (lt > 0) figures[`${v} slowdown`] = Number((bt / lt).toFixed(3));
      if (ratio < 1 - tol)
        problems.push(
          `${v} ran at ${pct(ratio)} of its baseline (${lt.toFixed(2)} vs ${bt.toFixed(2)} TFLOP/s; tolerance ${pct(tol)})`,
        );
    }
  }
  for (const m of completions(h, ref.scenario, "memcheck")) {
    const failedChecks = (m.data.checks ?? []).filter((c) => !c).length;
    figures[`${m.instance} memory checks failed`] = failedChecks;
    if (m.type !== "ok" || failedChecks > 0 || (m.data.checks ?? []).length === 0) {
      problems.push(`${m.instance} could not allocate its memory after the aggressor's OOM`);
      logLines.push(...tailOf(m.data));
    }
  }
  if (problems.length > 0) return verdict(name, "failed", problems.join("; "), figures, logLines);
  return verdict(
    name,
    "passed",
    `${loads.length} victim(s) unaffected; worst at ${pct(worst === Number.POSITIVE_INFINITY ? 1 : worst)} of baseline`,
    figures,
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
  const xids = log.data.xids ?? [];
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
  if (!XID_FAULTS.has(ref.fault)) {
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
  const r = completions(h, ref.scenario, "recovery")[0];
  if (!r) return verdict(name, "broken", "the recovery stress never completed");
  const resetXids = (completions(h, ref.scenario, "dmesg")[0]?.data.xids ?? []).filter((x) =>
    RESET_XIDS.has(x.xid),
  );
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
