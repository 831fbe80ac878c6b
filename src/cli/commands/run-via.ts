// `run --via slurm [--partition P] [--reservation R]`: the options of the run passed on to one
// job per node (src/harness/via-slurm.ts), the jobs' states shown, one result gathered.
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../../errors.js";
import type { SuiteFile } from "../../harness/suites.js";
import { runViaSlurm } from "../../harness/via-slurm.js";
import type { NodeSpec } from "../../inventory/types.js";
import { dbPath } from "../../store/db.js";
import { isPostgresUrl } from "../../store/store.js";
import { countOf } from "../../verdicts/checks.js";
import type { Out } from "../context.js";
import type { RunCliOptions } from "./run.js";

const BIN = fileURLToPath(new URL("../../../bin/slicecheck.js", import.meta.url));

export async function viaSlurm(
  o: RunCliOptions,
  r: { inventory: string; nodes: NodeSpec[]; suites: SuiteFile[]; runId: string },
  io: Out,
): Promise<number> {
  if (o.via !== "slurm") throw new SlicecheckError("USAGE", `--via takes slurm, got '${o.via}'`);
  const bare = r.nodes.filter((n) => !n.slurmNode).map((n) => n.name);
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
  const db = dbPath(o.db);
  const args = [
    "--suites",
    r.suites.map((f) => (f.builtin ? f.name : f.path)).join(","),
    "--duration",
    String(o.duration),
    "--db",
    isPostgresUrl(db) ? db : resolve(db),
    ...(o.layout ? ["--layout", resolve(o.layout)] : []),
    ...(o.config ? ["-c", o.config] : []),
    ...(o.label ? ["--label", o.label] : []),
    ...(o.faults ? ["--faults", o.faults] : []),
    ...(o.tolerance !== undefined ? ["--tolerance", `${o.tolerance * 100}%`] : []),
    ...(o.keep ? ["--keep"] : []),
    ...(o.journalDir ? ["--journal-dir", resolve(o.journalDir)] : []),
  ];
  const outDir = resolve(o.out ?? join("reports", "runs", r.runId));
  const t0 = Date.now();
  io.err(
    `run ${r.runId} via Slurm: one job per node on ${r.nodes.length} node(s); output in ${outDir}`,
  );
  const res = await runViaSlurm({
    runId: r.runId,
    nodes: r.nodes,
    inventoryFile: r.inventory,
    args,
    outDir,
    partition: o.partition ?? null,
    reservation: o.reservation ?? null,
    command: [process.execPath, BIN],
    progress: (l) => {
      if (!o.json) io.err(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${l}`);
    },
  });
  const n = countOf(res.checks);
  if (o.json)
    io.out(
      JSON.stringify(
        { runId: r.runId, exitCode: res.exitCode, jobs: res.jobs, checks: res.checks },
        null,
        2,
      ),
    );
  else {
    for (const j of res.jobs)
      io.out(
        `${j.node}: job ${j.jobId} ${j.states.join(" → ")}, slicecheck exit ${j.exitCode ?? "none (see job.log)"}`,
      );
    io.out(
      `${n.passed} passed, ${n.failed} failed, ${n.broken} broken, ${n.skipped} skipped (in ${((Date.now() - t0) / 1000).toFixed(1)} s)`,
    );
  }
  return res.exitCode;
}
