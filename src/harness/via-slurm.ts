// `run --via slurm`: the fleet path. One batch job per node (`sbatch -w NODE`, in a partition
// or maintenance reservation), each running slicecheck on its node's behalf with the same
// suites and options, writing to the shared records database (--db postgres://…) and to
// <out>/<node>/. The controller submits through the first node's Slurm commands (a login node's
// part), shows the jobs' states as they change, and gathers the nodes' checks into one result.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { openTransport } from "../transport/open.js";
import type { Transport } from "../transport/types.js";
import { quote } from "../util/shell.js";
import { type CheckRecord, exitOf } from "../verdicts/checks.js";
import { parseNodes } from "../verdicts/slurm.js";

export interface ViaSlurmOptions {
  runId: string;
  nodes: NodeSpec[];
  inventoryFile: string;
  /** The run's own arguments, passed on to each node's job (suites, duration, layout, db…). */
  args: string[];
  outDir: string;
  partition: string | null;
  reservation: string | null;
  /** The slicecheck each job runs: this one (a shared file system, as HPC sites have). */
  command: string[];
  progress(line: string): void;
}

export interface ViaSlurmJob {
  node: string;
  jobId: string;
  states: string[];
  exitCode: number | null;
}

export interface ViaSlurmResult {
  exitCode: number;
  jobs: ViaSlurmJob[];
  checks: CheckRecord[];
}

function jobScript(o: ViaSlurmOptions, node: NodeSpec, out: string): string {
  const argv = [
    ...o.command,
    "run",
    "-i",
    resolve(o.inventoryFile),
    "--nodes",
    node.name,
    "--run-id",
    o.runId,
    ...o.args,
    "--out",
    out,
  ];
  // The exit code goes to a file: with no accounting storage, Slurm forgets it with the job.
  return `${argv.map(quote).join(" ")}; echo $? > ${quote(join(out, "exit-code"))}`;
}

async function sh(t: Transport, argv: string[]): Promise<string> {
  const r = await t.exec({ argv }, { timeoutMs: 60_000 });
  if (r.exitCode !== 0)
    throw new SlicecheckError(
      "SLURM",
      `${argv.slice(0, 2).join(" ")} on ${t.node.name} failed (exit ${r.exitCode}): ${r.stderr.trim()}`,
    );
  return r.stdout;
}

export async function runViaSlurm(o: ViaSlurmOptions): Promise<ViaSlurmResult> {
  const submit = o.nodes[0];
  if (!submit) throw new SlicecheckError("USAGE", "--via slurm needs at least one node");
  const t = openTransport(submit, { runId: o.runId });
  const jobs: ViaSlurmJob[] = [];
  try {
    await t.connect();
    for (const n of o.nodes) {
      const out = resolve(o.outDir, n.name);
      mkdirSync(out, { recursive: true });
      // No --partition: the node's own first one (a cluster need not have a default partition).
      const partition =
        o.partition ??
        parseNodes(await sh(t, ["scontrol", "show", "node", "-o", n.slurmNode ?? n.name]))[0]
          ?.partitions[0] ??
        null;
      const id = await sh(t, [
        "sbatch",
        "--parsable",
        // A clean environment: the submit session's run tag would have its watchdog kill the
        // job when the controller disconnects.
        "--export=NONE",
        `--nodelist=${n.slurmNode}`,
        ...(partition ? [`--partition=${partition}`] : []),
        ...(o.reservation ? [`--reservation=${o.reservation}`] : []),
        `--job-name=slicecheck-${o.runId}`,
        `--output=${join(out, "job.log")}`,
        `--wrap=${jobScript(o, n, out)}`,
      ]);
      const jobId = id.trim().split(";")[0] ?? "";
      jobs.push({ node: n.name, jobId, states: [], exitCode: null });
      o.progress(`${n.name}: submitted job ${jobId}`);
    }
    const ids = jobs.map((j) => j.jobId).join(",");
    for (;;) {
      const q = await sh(t, ["squeue", "-h", "-j", ids, "-o", "%i %T %R"]).catch(() => "");
      const live = new Map(
        q
          .split("\n")
          .filter(Boolean)
          .map((l) => [l.split(" ")[0] ?? "", l.split(" ").slice(1).join(" ")]),
      );
      for (const j of jobs) {
        const state = live.get(j.jobId)?.split(" ")[0] ?? "ENDED";
        if (j.states.at(-1) !== state) {
          j.states.push(state);
          o.progress(`${j.node}: job ${j.jobId} ${live.get(j.jobId) ?? "ended"}`);
        }
      }
      if (live.size === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    await t.close().catch(() => {});
  }
  return gather(o, jobs);
}

/** The nodes' checks as one run: their union, and the exit code it gives. */
function gather(o: ViaSlurmOptions, jobs: ViaSlurmJob[]): ViaSlurmResult {
  const checks: CheckRecord[] = [];
  let worst = 0;
  const ran = (c: number | null) => c !== null && !Number.isNaN(c);
  for (const j of jobs) {
    const out = resolve(o.outDir, j.node);
    const codeFile = join(out, "exit-code");
    j.exitCode = existsSync(codeFile) ? Number(readFileSync(codeFile, "utf8").trim()) : null;
    const file = join(out, "checks.jsonl");
    if (existsSync(file))
      for (const l of readFileSync(file, "utf8").split("\n"))
        if (l.trim()) checks.push(JSON.parse(l) as CheckRecord);
    // A job that never ran slicecheck to its end could not check its node.
    const code = ran(j.exitCode) ? (j.exitCode as number) : 2;
    worst = code === 1 || worst === 1 ? 1 : Math.max(worst, code);
  }
  // As a run's own exit: a failed check (1) outranks one that could not be decided (2).
  const codes = [worst, exitOf(checks)];
  const exitCode = codes.includes(1) ? 1 : Math.max(...codes);
  writeFileSync(
    join(o.outDir, "via-slurm.json"),
    `${JSON.stringify({ runId: o.runId, exitCode, jobs }, null, 2)}\n`,
  );
  writeFileSync(
    join(o.outDir, "checks.jsonl"),
    checks.map((c) => JSON.stringify(c)).join("\n") + (checks.length ? "\n" : ""),
  );
  return { exitCode, jobs, checks };
}
