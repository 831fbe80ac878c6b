// `run --via slurm [--partition P] [--reservation R] [--start-timeout D] [--time-limit D]
// [--completing-grace D]`: the options of the run passed on to a job array's tasks, one per
// node (src/harness/via-slurm.ts), the tasks' states shown, one run's reports gathered.
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../../errors.js";
import type { SuiteFile } from "../../harness/suites.js";
import { interruptExitCode } from "../../harness/tasks.js";
import { runViaSlurm } from "../../harness/via-slurm.js";
import { COMPLETING_GRACE_S } from "../../harness/via-slurm-watch.js";
import type { NodeSpec } from "../../inventory/types.js";
import { dbPath } from "../../store/db.js";
import { isPostgresUrl } from "../../store/store.js";
import { sharedAbort } from "../../util/abort.js";
import { countOf } from "../../verdicts/checks.js";
import type { Out } from "../context.js";
import type { RunCliOptions } from "./run-options.js";

const BIN = fileURLToPath(new URL("../../../bin/slicecheck.js", import.meta.url));

export async function viaSlurm(
  o: RunCliOptions,
  r: { inventory: string; nodes: NodeSpec[]; suites: SuiteFile[]; runId: string },
  io: Out,
): Promise<number> {
  refuseVia(o, r.nodes);
  const args = taskArgs(o, r.suites);
  const outDir = resolve(o.out ?? join("reports", "runs", r.runId));
  const t0 = Date.now();
  io.err(
    `run ${r.runId} via Slurm: a job array, one task per node, on ${r.nodes.length} node(s); output in ${outDir}`,
  );
  const ac = sharedAbort();
  const onSignal = cancelOnSignal(ac, r.runId, io);
  const res = await runViaSlurm({
    runId: r.runId,
    label: o.label ?? null,
    nodes: r.nodes,
    inventoryFile: r.inventory,
    suites: r.suites.map((f) => f.name),
    args,
    layout: o.layout ? resolve(o.layout) : null,
    outDir,
    partition: o.partition ?? null,
    reservation: o.reservation ?? null,
    startTimeoutS: o.startTimeout ?? 3600,
    timeLimitS: o.timeLimit ?? null,
    completingGraceS: o.completingGrace ?? COMPLETING_GRACE_S,
    allure: o.allure !== false,
    command: [process.execPath, BIN],
    signal: ac.signal,
    progress: (l) => {
      if (!o.json) io.err(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${l}`);
    },
  }).finally(() => {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  });
  const n = countOf(res.checks);
  if (o.json)
    io.out(
      JSON.stringify(
        {
          runId: r.runId,
          exitCode: res.exitCode,
          arrayId: res.arrayId,
          interrupted: res.interrupted,
          jobs: res.jobs,
          checks: res.checks,
        },
        null,
        2,
      ),
    );
  else {
    for (const j of res.jobs)
      io.out(
        `${j.node}: job ${j.jobId} ${j.states.join(" → ")}, slicecheck exit ${j.exitCode ?? "none (see job.log)"}`,
      );
    for (const c of res.checks.filter((x) => x.status === "failed" || x.status === "broken"))
      io.out(`${c.node ?? "run"}: ${c.suite}: ${c.title}: ${c.status} [${c.code}] ${c.message}`);
    io.out(
      `${n.passed} passed, ${n.failed} failed, ${n.broken} broken, ${n.skipped} skipped (in ${((Date.now() - t0) / 1000).toFixed(1)} s)`,
    );
    io.out(
      `reports: ${join(outDir, "junit.xml")}, ${join(outDir, "checks.jsonl")}${o.allure !== false ? `, Allure results in ${join(outDir, "allure-results")} (\`slicecheck report --results ${join(outDir, "allure-results")}\`)` : ""}`,
    );
  }
  return res.exitCode;
}

/** What --via slurm cannot do, refused before anything is submitted. */
function refuseVia(o: RunCliOptions, nodes: NodeSpec[]): void {
  if (o.via !== "slurm") throw new SlicecheckError("USAGE", `--via takes slurm, got '${o.via}'`);
  const bare = nodes.filter((n) => !n.slurmNode).map((n) => n.name);
  if (bare.length)
    throw new SlicecheckError(
      "USAGE",
      `--via slurm runs a job on each node's Slurm node, but ${bare.join(", ")} has no slurm_node in the inventory; set it`,
    );
  if (o.drain || o.list)
    throw new SlicecheckError(
      "USAGE",
      `--via slurm cannot ${o.drain ? "--drain (a node running the job is not drained; use --reservation)" : "--list"}`,
    );
}

/** The options of the run each task passes on to its node's `slicecheck run`: paths made
 * absolute (the task starts in another folder), the node's commands run locally. */
function taskArgs(o: RunCliOptions, suites: SuiteFile[]): string[] {
  const db = dbPath(o.db);
  return [
    "--suites",
    suites.map((f) => (f.builtin ? f.name : f.path)).join(","),
    "--duration",
    String(o.duration),
    "--db",
    isPostgresUrl(db) ? db : resolve(db),
    ...(o.dbTimeout !== undefined ? ["--db-timeout", String(o.dbTimeout)] : []),
    ...(o.layout ? ["--layout", resolve(o.layout)] : []),
    ...(o.config ? ["-c", o.config] : []),
    ...(o.label ? ["--label", o.label] : []),
    ...(o.faults ? ["--faults", o.faults] : []),
    ...(o.tolerance !== undefined ? ["--tolerance", `${o.tolerance * 100}%`] : []),
    ...(o.keep ? ["--keep"] : []),
    ...(o.journalDir ? ["--journal-dir", resolve(o.journalDir)] : []),
    ...(o.grep ? ["--grep", o.grep] : []),
    ...(o.aggressors !== undefined ? ["--aggressors", String(o.aggressors)] : []),
    ...(o.tenants ? ["--tenants", o.tenants] : []),
    ...(o.busbwFloor !== undefined ? ["--busbw-floor", String(o.busbwFloor)] : []),
    ...(o.allowReset ? ["--allow-reset"] : []),
    ...(o.regenerateCdi ? ["--regenerate-cdi"] : []),
    ...(o.lease !== undefined ? ["--lease", String(o.lease)] : []),
    ...(o.allure === false ? ["--no-allure"] : []),
    // The task runs on its node: the node's commands run right there (local transport).
    "--local",
    // The node's own Slurm jobs (the slurm suite's probes) go where its task runs.
    ...(o.reservation ? ["--reservation", o.reservation] : []),
  ];
}

/** First SIGINT/SIGTERM: cancel the array and gather what the nodes wrote (exit 130 or 143, as
 * a direct run); a second one stops waiting. Returns the handler, installed; the caller removes
 * it when the array is done. */
function cancelOnSignal(ac: AbortController, runId: string, io: Out) {
  const onSignal = (sig: NodeJS.Signals) => {
    if (!ac.signal.aborted) {
      io.err(`slicecheck: ${sig}: cancelling the job array, then gathering what the nodes wrote`);
      ac.abort(`${sig}`);
      return;
    }
    io.err(
      `slicecheck: ${sig} again: stopped waiting; \`scancel -n slicecheck-${runId}\` ends the tasks left`,
    );
    process.exit(interruptExitCode(sig));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return onSignal;
}
