// `slicecheck run`: the suites on every selected node. This issue's suites are `stress` and
// `nccl`: one workload on every MIG instance of a node at once, nodes in parallel, live progress,
// a per-instance table, and every measurement written as it arrives, even when interrupted.
import { setMaxListeners } from "node:events";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pLimit from "p-limit";
import {
  type IsolationSummary,
  isolationExit,
  parseFaults,
  runIsolation,
} from "../../chaos/isolation.js";
import { SlicecheckError } from "../../errors.js";
import type { NodeSpec } from "../../inventory/types.js";
import {
  applyLayout,
  assertLayout,
  DEFAULT_JOURNAL_DIR,
  restoreNodes,
  validateOffline,
} from "../../mig/apply/index.js";
import { loadLayout, selectConfig } from "../../mig/layout/index.js";
import type { ExtraCheck } from "../../report/context.js";
import { readDmesgAll, readHealthAll } from "../../report/health-read.js";
import { dbPath, openDb } from "../../store/db.js";
import { Recorder, type RunStatus } from "../../store/recorder.js";
import { readTopology } from "../../store/topology.js";
import { newRunId } from "../../transport/open.js";
import { healthChecks, layoutChecks } from "../../verdicts/health.js";
import { regressionChecks } from "../../verdicts/regression.js";
import {
  instanceLabel,
  type NodeRunResult,
  runNode,
  type SuiteName,
} from "../../workloads/node-run.js";
import { summarize } from "../../workloads/summary.js";
import { displayPath, loadSelected, type NodeOptions, type Out } from "../context.js";
import { checkRunPaths } from "../options.js";
import { printChangeReports, worstExit } from "./apply.js";
import { printIsolation, printRun } from "./run-print.js";

/** Suites that are not workloads on the instances: checks of the layout, the GPUs, the records. */
export type CheckSuite = "isolation" | "layout" | "health" | "regression";

export const RUN_SUITES: readonly (SuiteName | CheckSuite)[] = [
  "stress",
  "nccl",
  "isolation",
  "layout",
  "health",
  "regression",
];

export interface RunCliOptions extends NodeOptions {
  suites: string;
  layout?: string;
  config?: string;
  keep?: boolean;
  allowReset?: boolean;
  journalDir?: string;
  duration: number;
  out?: string;
  json?: boolean;
  concurrency?: number;
  /** The records database (`--db`, $SLICECHECK_DB, reports/slicecheck.db) and the run's label. */
  db?: string;
  label?: string;
  /** isolation: the faults to inject (default all). */
  faults?: string;
  /** isolation: allowed throughput loss of a victim, as a fraction (default 0.05). */
  tolerance?: number;
  /** isolation: at most this many aggressors per GPU (default every instance). */
  aggressors?: number;
  /** `--no-allure`: skip the Allure results (run.json, junit.xml and the JSON summary stay). */
  allure?: boolean;
}

export function parseSuites(s: string): (SuiteName | CheckSuite)[] {
  const list = s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = list.filter((x) => !(RUN_SUITES as readonly string[]).includes(x));
  if (bad.length || list.length === 0) {
    throw new SlicecheckError(
      "USAGE",
      `--suites: unknown suite ${bad.map((b) => `'${b}'`).join(", ") || "(none given)"}; available: ${RUN_SUITES.join(", ")}`,
    );
  }
  return [...new Set(list)] as (SuiteName | CheckSuite)[];
}

async function restoreAfter(
  nodes: NodeSpec[],
  session: { runId: string; journalDir: string; allowReset: boolean },
  io: Out,
): Promise<void> {
  io.err("restoring the original MIG layout (use --keep to leave the run's layout in place)");
  const restored = await restoreNodes(nodes, session);
  if (worstExit(restored) !== 0) {
    printChangeReports(restored, "restore", "the journal", io);
    io.err(
      "slicecheck: the original layout could not be restored everywhere; run `slicecheck restore` once the cause is fixed",
    );
  }
}

export async function runCommand(o: RunCliOptions, io: Out): Promise<number> {
  checkRunPaths(o, dbPath(o.db));
  const all = parseSuites(o.suites);
  const isolation = all.includes("isolation");
  const suites = all.filter((x): x is SuiteName => x === "stress" || x === "nccl");
  const checks: ExtraCheck[] = [];
  const faults = isolation ? parseFaults(o.faults) : [];
  // The layout is checked before any node is touched, like everything else about the input.
  const config = o.layout ? selectConfig(loadLayout(o.layout), o.config) : null;
  if (config && o.layout) validateOffline(config, o.layout);
  if (!o.layout && all.includes("layout"))
    throw new SlicecheckError(
      "USAGE",
      "--suites layout checks the layout a run applies; give --layout FILE -c NAME too",
    );
  if (!o.layout && o.config)
    throw new SlicecheckError(
      "USAGE",
      "-c/--config names a config of a --layout file; give --layout too",
    );
  const { nodes } = loadSelected(o);
  const runId = newRunId();
  const session = {
    runId,
    journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
    allowReset: o.allowReset ?? false,
    keep: o.keep ?? false,
  };
  const outDir = o.out ?? join("reports", "runs", runId);
  // The records hook: a start row now, each node as it finishes, the status at the end.
  const recorder = Recorder.start(dbPath(o.db), {
    runId,
    label: o.label,
    argv: process.argv.slice(2),
  });
  mkdirSync(outDir, { recursive: true });
  const measurementsFile = join(outDir, "measurements.jsonl");
  const started = Date.now();
  const ac = new AbortController();
  // Every remote command of the run listens on this one signal: dozens of instances are normal.
  setMaxListeners(0, ac.signal);
  const onSigint = () => {
    io.err("slicecheck: interrupted; stopping the workloads and writing what was measured");
    ac.abort();
  };
  process.once("SIGINT", onSigint);
  process.once("SIGTERM", onSigint);
  io.err(
    `run ${runId}: ${all.join(",")} on ${nodes.length} node(s), ${o.duration} s each; output in ${displayPath(outDir)}`,
  );

  const results: NodeRunResult[] = [];
  const dmesgAtStart = all.includes("health") ? await readDmesgAll(nodes, runId) : null;
  let isolationSummary: IsolationSummary | null = null;
  if (config && o.layout) {
    io.err(`applying config '${config.name}' of ${o.layout}`);
    const applied = await applyLayout(nodes, config, {
      ...session,
      dryRun: false,
      layout: { file: o.layout, config: config.name },
    });
    for (const n of applied) for (const g of n.gpus) recorder.steps(n.node, g.index, g.timings);
    const worst = worstExit(applied);
    if (worst !== 0) {
      printChangeReports(applied, "apply", `config '${config.name}'`, io);
      // Whatever was changed before the failure is put back; a refused apply changed nothing.
      if (!o.keep) await restoreAfter(nodes, session, io);
      recorder.finish("broken");
      return worst;
    }
    if (all.includes("layout"))
      checks.push(...layoutChecks(await assertLayout(nodes, config, session), config.name));
  }
  try {
    const limit = pLimit(o.concurrency ?? 64);
    await Promise.all(
      nodes.map((node) =>
        limit(async () => {
          if (suites.length === 0) return;
          const r = await runNode(node, {
            runId,
            suites,
            durationS: o.duration,
            outDir,
            signal: ac.signal,
            onLine: (inst, line) => {
              if (!o.json && /^SLICECHECK stress |^# Avg bus bandwidth/.test(line)) {
                io.err(
                  `[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${inst.node} ${instanceLabel(inst)} ${line.replace(/^SLICECHECK /, "")}`,
                );
              }
            },
          });
          // Written as each node finishes, so an interrupted run keeps what it measured.
          // The live catalogue is read while the run's layout is still in place (MIG on).
          const migOn = r.inventory?.instances.some((i) => i.gpuInstanceId !== null) ?? false;
          const topology = migOn ? await readTopology(node, runId) : new Map();
          recorder.node(r, topology, config?.name ?? null);
          for (const s of r.suites) {
            for (const out of s.outcomes) {
              for (const m of out.measurements) {
                appendFileSync(
                  measurementsFile,
                  `${JSON.stringify({ runId, suite: s.suite, ...m })}\n`,
                );
                recorder.measurement(s.suite, m, out.instance.gpuName);
              }
            }
          }
          results.push(r);
        }),
      ),
    );
    if (isolation && !ac.signal.aborted)
      isolationSummary = await runIsolation(nodes, {
        runId,
        faults,
        durationS: o.duration,
        outDir,
        tolerance: o.tolerance,
        aggressors: o.aggressors,
        concurrency: o.concurrency,
        signal: ac.signal,
        onProgress: (line) => {
          if (!o.json)
            io.err(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}`);
        },
      });
  } finally {
    process.removeListener("SIGINT", onSigint);
    process.removeListener("SIGTERM", onSigint);
    if (dmesgAtStart && !ac.signal.aborted) {
      const read = await readHealthAll(nodes, runId);
      for (const node of nodes) {
        const h = read.get(node.name);
        checks.push(
          ...healthChecks({
            node: node.name,
            smiExit: h?.smiExit ?? null,
            smiOutput: h?.smiOutput ?? "not read",
            dmesgBefore: dmesgAtStart.get(node.name) ?? null,
            dmesgAfter: h?.dmesg ?? null,
            isolationGpus: new Set(
              (isolationSummary?.rows ?? []).filter((r) => r.node === node.name).map((r) => r.gpu),
            ),
          }),
        );
      }
    }
    if (config && !o.keep) await restoreAfter(nodes, session, io);
  }

  const summary = summarize(runId, results);
  writeFileSync(join(outDir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  const iso = isolationSummary ? isolationExit(isolationSummary) : 0;
  if (o.json)
    io.out(
      JSON.stringify(
        isolationSummary ? { ...summary, isolation: isolationSummary } : summary,
        null,
        2,
      ),
    );
  else {
    if (suites.length > 0) printRun(summary, io, outDir, Date.now() - started);
    if (isolationSummary) printIsolation(isolationSummary, io, outDir);
    for (const c of checks)
      io.out(`${c.suite}: ${c.status.toUpperCase()} ${c.title}: ${c.message}`);
  }
  // The regression suite compares what the records hold, so this run's rows must be in first.
  if (all.includes("regression") && !ac.signal.aborted)
    checks.push(...regressionOf(recorder, runId));
  const code = ac.signal.aborted
    ? 2
    : summary.rows.some((r) => r.status === "failed") ||
        iso === 1 ||
        checks.some((c) => c.status === "failed")
      ? 1
      : summary.rows.some((r) => r.status === "broken") ||
          summary.problems.length ||
          iso === 2 ||
          checks.some((c) => c.status === "broken")
        ? 2
        : 0;
  const status: RunStatus = ac.signal.aborted
    ? "interrupted"
    : ((["passed", "failed", "broken"] as const)[code] ?? "broken");
  recorder.finish(status);
  await (await import("../../report/run-reports.js")).reportRun(
    {
      runId,
      label: o.label ?? null,
      startedMs: started,
      exitCode: code,
      suites: all,
      results,
      layout: config && o.layout ? { file: o.layout, config: config.name } : null,
      rows: summary.rows,
      problems: summary.problems,
      isolation: isolationSummary,
      checks,
    },
    outDir,
    { allure: o.allure !== false },
    io,
  );
  return code;
}

/** The regression suite over the records; a database that cannot be read makes it broken. */
function regressionOf(recorder: Recorder, runId: string): ExtraCheck[] {
  const db = openDb(recorder.path, { mustExist: true });
  try {
    return regressionChecks(db, runId);
  } catch (e) {
    return [
      {
        suite: "regression",
        node: "run",
        gpu: null,
        title: "measurements compared with another driver",
        status: "broken",
        message: `could not compare with the records: ${(e as Error).message}`,
        parameters: {},
        attachment: null,
      },
    ];
  } finally {
    db.close();
  }
}
