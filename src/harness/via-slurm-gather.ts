// The end of `run --via slurm`: the nodes' results (each task's <out>/<node>/) gathered into
// the reports a direct run writes at <out>/ (run.json, junit.xml, results-summary.json,
// checks.jsonl, measurements.jsonl, history.jsonl, Allure results), so that CI, the compliance
// page and `slicecheck report <out>/allure-results` see one run. A node whose task left no
// results is a broken check naming the job, its end state and its log's tail: never missing.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { completeAllureResults } from "../report/allure-complete.js";
import { type ContextNode, RUN_CONTEXT_FILE, type RunFacts } from "../report/context.js";
import { writeCheckReports } from "../report/from-checks.js";
import { executorInfo } from "../report/suites.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import { type CheckRecord, exitOf, readCheck } from "../verdicts/checks.js";
import type { Instance } from "../workloads/instances.js";
import { interruptExitCode } from "./tasks.js";
import type { ViaSlurmJob, ViaSlurmOptions } from "./via-slurm-options.js";
import { CONFINED_FILE } from "./via-slurm-script.js";

export const SLURM_JOB_TITLE = "the node's Slurm job ran slicecheck";

const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : null);

function jsonl<T>(file: string): T[] {
  return (read(file) ?? "")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

/** run.json keeps an instance as the reports show it; the reports take it back from there. */
function instancesOf(n: ContextNode): Instance[] {
  return (n.instances ?? []).map((i) => {
    const ids = /\/gi(\d+)\/ci(\d+)$/.exec(i.label);
    const gpu = n.gpus.find((g) => g.index === i.gpu);
    return {
      node: n.node,
      gpu: i.gpu,
      gpuUuid: gpu?.uuid ?? "",
      gpuName: gpu?.name ?? "",
      uuid: i.uuid,
      profile: i.profile,
      gpuInstanceId: ids ? Number(ids[1]) : null,
      computeInstanceId: ids ? Number(ids[2]) : null,
      placement: i.placement,
      sm: i.sm,
      memoryMiB: null,
    };
  });
}

function tail(file: string, lines = 20): string {
  const text = read(file);
  if (text === null) return `no ${file}: the task never started`;
  const all = text.replace(/\n$/, "").split("\n");
  return `last ${Math.min(lines, all.length)} line(s) of ${file}:\n${all.slice(-lines).join("\n")}`;
}

function missing(j: ViaSlurmJob, dir: string, exitCode: number | null): CheckRecord {
  const now = Date.now();
  const end = j.states.at(-1) ?? "never seen";
  // The task saw fewer GPU devices than it holds (the array script's check): broken with the
  // confinement's own code, never a GPU reported lost.
  const confined = read(join(dir, CONFINED_FILE))?.trim();
  return {
    id: `${j.node}.slurm-job`,
    suite: HARNESS_SUITE,
    node: j.node,
    gpu: null,
    instance: null,
    title: SLURM_JOB_TITLE,
    fullTitle: SLURM_JOB_TITLE,
    status: "broken",
    code: confined ? "SLURM_DEVICES_CONFINED" : "SLURM_JOB",
    message: confined
      ? `${confined.replace(/^slicecheck: /, "")} (job ${j.jobId} ended ${end})`
      : `job ${j.jobId} (Slurm node ${j.slurmNode}) ended ${end}${j.note ? ` (${j.note})` : ""}${exitCode === null ? "" : `, slicecheck exit ${exitCode}`}, leaving no results in ${dir}; its node was not checked. ${tail(join(dir, "job.log"))}`,
    figures: {},
    evidence: [],
    steps: [],
    parameters: { job: j.jobId, state: end },
    startMs: now,
    stopMs: now,
  };
}

/** Each node's Allure results into <out>/allure-results (their names are uuids: a copy merges
 * them), the check ids they name renamed as in the merged records; then one result per check
 * that has none. */
function mergeAllure(outDir: string, nodes: string[], checks: CheckRecord[]): void {
  const dest = join(outDir, "allure-results");
  mkdirSync(dest, { recursive: true });
  for (const node of nodes) {
    const src = join(outDir, node, "allure-results");
    if (!existsSync(src)) continue;
    for (const f of readdirSync(src)) {
      // The run's own executor and environment were written for all the nodes.
      if (f === "executor.json" || f === "environment.properties") continue;
      if (f === "categories.json" && existsSync(join(dest, f))) continue;
      if (!f.endsWith("-result.json")) {
        copyFileSync(join(src, f), join(dest, f));
        continue;
      }
      const r = JSON.parse(readFileSync(join(src, f), "utf8")) as {
        parameters?: { name: string; value: string }[];
      };
      for (const p of r.parameters ?? []) if (p.name === "check") p.value = `${node}.${p.value}`;
      writeFileSync(join(dest, f), JSON.stringify(r));
    }
  }
  // A missing node's broken check (and any other check no test wrote) gets a result of its
  // own, so Allure counts what the records count.
  completeAllureResults(dest, checks);
}

export function gatherViaSlurm(
  o: ViaSlurmOptions,
  jobs: ViaSlurmJob[],
  interrupted: boolean,
): { exitCode: number; checks: CheckRecord[] } {
  const checks: CheckRecord[] = [];
  const nodes: Parameters<typeof writeCheckReports>[0]["nodes"] = [];
  const codes: number[] = [];
  const lines = { measurements: [] as string[], history: [] as string[] };
  let layout: RunFacts["layout"] = null;
  let scope: RunFacts["scope"];
  for (const j of jobs) {
    const dir = join(o.outDir, j.node);
    const code = read(join(dir, "exit-code"));
    j.exitCode = code === null || Number.isNaN(Number(code.trim())) ? null : Number(code.trim());
    const ctxText = read(join(dir, RUN_CONTEXT_FILE));
    const ctx = ctxText === null ? null : (JSON.parse(ctxText) as RunFacts);
    // Ids are unique within a node's run; the node's name keeps them so within this one.
    for (const c of jsonl<CheckRecord>(join(dir, "checks.jsonl")))
      checks.push({ ...readCheck(c), id: `${j.node}.${c.id}` });
    for (const k of ["measurements", "history"] as const)
      lines[k].push(...(read(join(dir, `${k}.jsonl`)) ?? "").split("\n").filter(Boolean));
    const mine = ctx?.nodes.find((n) => n.node === j.node);
    if (!ctx) {
      checks.push(missing(j, dir, j.exitCode));
    } else {
      layout ??= ctx.layout;
      // Every task ran with the same flags: the first one's scope is the run's.
      scope ??= ctx.scope;
      codes.push(j.exitCode ?? ctx.exitCode);
    }
    nodes.push({
      node: j.node,
      driver: mine?.driver ?? null,
      cuda: mine?.cuda ?? null,
      instances: mine ? instancesOf(mine) : [],
      error: ctx ? (mine?.error ?? null) : `its Slurm job ${j.jobId} left no results`,
    });
  }
  // As a run's own exit: a failed check (1) outranks one that could not be decided (2).
  const all = [exitOf(checks), ...codes];
  // Interrupted: 128 + the controller's own signal (the abort's reason), as a direct run exits,
  // so a scheduler that sent the controller SIGTERM sees 143, not SIGINT's 130.
  const sig = o.signal?.reason === "SIGTERM" ? "SIGTERM" : "SIGINT";
  const exitCode = interrupted ? interruptExitCode(sig) : all.includes(1) ? 1 : Math.max(...all);
  const text = (l: string[]) => l.join("\n") + (l.length ? "\n" : "");
  writeFileSync(join(o.outDir, "checks.jsonl"), text(checks.map((c) => JSON.stringify(c))));
  writeFileSync(join(o.outDir, "measurements.jsonl"), text(lines.measurements));
  if (lines.history.length) writeFileSync(join(o.outDir, "history.jsonl"), text(lines.history));
  writeCheckReports({
    runId: o.runId,
    label: o.label,
    exitCode,
    interrupted,
    suites: o.suites,
    layout,
    checks,
    nodes,
    history: join(o.outDir, "history.jsonl"),
    outDir: o.outDir,
    allure: o.allure,
    executor: executorInfo({ runId: o.runId, label: o.label }),
    completeAllure: false,
    ...(scope ? { scope } : {}),
  });
  // After writeCheckReports: the nodes' results were given their attachments on the nodes.
  if (o.allure)
    mergeAllure(
      o.outDir,
      jobs.map((j) => j.node),
      checks,
    );
  writeFileSync(
    join(o.outDir, "via-slurm.json"),
    `${JSON.stringify({ runId: o.runId, exitCode, interrupted, jobs }, null, 2)}\n`,
  );
  return { exitCode, checks };
}
