// Isolation verdicts over one scenario's history (src/chaos/history.ts): did the victims keep
// their throughput and memory, did the aggressor fail the way its fault says, did the kernel log
// blame only the aggressor, and does the aggressor's instance work again without a GPU reset.
// Pure: the history is all they read, so a saved history.jsonl can be judged again.
import type { ChaosEvent, FaultName } from "../chaos/history.js";
import { parseLgi } from "../nvsmi/lgi.js";
import {
  brokenByLoss,
  completions,
  RESET_XIDS,
  type ScenarioRef,
  tailOf,
  type VerdictOptions,
  verdict,
} from "./measure.js";
import type { Verdict } from "./types.js";
import { victimsUnaffected } from "./victims.js";

export {
  baselineProblem,
  DEFAULT_TOLERANCE,
  MIN_SAMPLES,
  RESET_XIDS,
  type ScenarioRef,
  STALL_MS,
  type VerdictOptions,
} from "./measure.js";
export { remeasureReason, victimsUnaffected } from "./victims.js";

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
  if (ref.fault === "exclusive" || ref.fault === "tenants")
    return verdict(name, "broken", `no fault in a ${ref.fault} check`);
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
  if (ref.fault === "exclusive" || ref.fault === "tenants" || !XID_FAULTS.has(ref.fault)) {
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
