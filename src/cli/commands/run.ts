// `slicecheck run`: a thin adapter from options to the harness (src/harness/run.ts). Everything
// about the input is checked here, before any node is touched; the end of the run lists every
// failed and broken check with its reason, then the verdict.
import { join } from "node:path";
import { parseFaults } from "../../chaos/isolation.js";
import { parseTenants } from "../../chaos/tenants.js";
import { SlicecheckError } from "../../errors.js";
import { runHarness } from "../../harness/run.js";
import { resolveSuites } from "../../harness/suites.js";
import { DEFAULT_JOURNAL_DIR, validateOffline } from "../../mig/apply/index.js";
import { selectConfig } from "../../mig/layout/index.js";
import { dbPath } from "../../store/db.js";
import { newRunId } from "../../transport/open.js";
import { countOf } from "../../verdicts/checks.js";
import { displayPath, loadSelected, type NodeOptions, type Out } from "../context.js";
import { loadLayoutInput } from "../input.js";
import { checkRunPaths } from "../options.js";
import { progressView, viewMode } from "../progress-view.js";
import { liveCheck, printEnd } from "./run-print.js";
import { viaSlurm } from "./run-via.js";

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
  db?: string;
  label?: string;
  faults?: string;
  /** Allowed throughput loss of a victim, as a fraction (default 0.05). */
  tolerance?: number;
  aggressors?: number;
  /** Soft routes: tenant counts (`2-7`, `2,4`, `none`). */
  tenants?: string;
  allure?: boolean;
  grep?: string;
  list?: boolean;
  bail?: boolean;
  /** No live progress; the end of the run is printed as usual. */
  quiet?: boolean;
  drain?: boolean;
  drainTimeout?: number;
  reportToSlurm?: boolean;
  via?: string;
  /** Given by `run --via slurm` to its jobs: one run id across the nodes. */
  runId?: string;
  partition?: string;
  reservation?: string;
}

export async function runCommand(o: RunCliOptions, io: Out): Promise<number> {
  checkRunPaths(o, dbPath(o.db));
  const suites = resolveSuites(o.suites);
  const faults = parseFaults(o.faults);
  const tenants = tenantsOption(o.tenants);
  const config = o.layout ? selectConfig(await loadLayoutInput(o.layout), o.config) : null;
  if (config && o.layout) validateOffline(config, o.layout);
  if (!o.layout && suites.some((s) => s.name === "layout"))
    throw new SlicecheckError(
      "USAGE",
      "--suites layout checks the layout a run applies; give --layout FILE -c NAME too",
    );
  if (!o.layout && o.config)
    throw new SlicecheckError(
      "USAGE",
      "-c/--config names a config of a --layout file; give --layout too",
    );
  if (o.reportToSlurm && !o.drain)
    throw new SlicecheckError(
      "USAGE",
      "--report-to-slurm leaves the nodes this run drained drained; give --drain too",
    );
  const { inventory, nodes } = loadSelected(o);
  if (o.drain && !nodes.some((n) => n.slurmNode))
    throw new SlicecheckError(
      "USAGE",
      "--drain drains the nodes' Slurm nodes, but no selected node has slurm_node in the inventory; set it (the node's name in Slurm) or drop --drain",
    );
  if (o.runId !== undefined && !/^sc-[A-Za-z0-9-]+$/.test(o.runId))
    throw new SlicecheckError(
      "USAGE",
      `--run-id expects an id like sc-20261129T101500Z-1a2b3c, got '${o.runId}'`,
    );
  const runId = o.runId ?? newRunId();
  if (o.via !== undefined)
    return viaSlurm(o, { inventory: inventory.file, nodes, suites, runId }, io);
  const outDir = o.out ?? join("reports", "runs", runId);
  if (!o.list)
    io.err(
      `run ${runId}: ${suites.map((s) => s.name).join(",")} on ${nodes.length} node(s), ${o.duration} s each; output in ${displayPath(outDir)}`,
    );
  const view = progressView(viewMode(o, io), io);
  const r = await runHarness({
    runId,
    nodes,
    inventoryFile: inventory.file,
    suites,
    outDir,
    durationS: o.duration,
    tolerance: o.tolerance ?? 0.05,
    faults,
    aggressors: o.aggressors ?? null,
    tenants,
    layout: config && o.layout ? { file: o.layout, config } : null,
    keep: o.keep ?? false,
    allowReset: o.allowReset ?? false,
    drain: o.drain
      ? { timeoutS: o.drainTimeout ?? 600, reportToSlurm: o.reportToSlurm ?? false }
      : null,
    journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
    db: dbPath(o.db),
    label: o.label ?? null,
    argv: process.argv.slice(2),
    grep: o.grep,
    bail: o.bail,
    list: o.list,
    allure: o.allure !== false,
    concurrency: o.concurrency ?? 64,
    events: (e) => view.event(e),
    onCheck: (c) => {
      const line = o.json ? null : liveCheck(c);
      if (line) view.message(line);
    },
    err: (line) => view.message(line),
  }).finally(() => view.stop());
  if (o.list) {
    const listed = r.listed ?? [];
    if (o.json) io.out(JSON.stringify({ runId, tests: listed }, null, 2));
    else {
      for (const t of listed) io.out(`${t.suite}: ${[...t.path.slice(1), t.title].join(" › ")}`);
      io.out(`${listed.length} test(s) in ${suites.length} suite(s) on ${nodes.length} node(s)`);
    }
    return 0;
  }
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          runId,
          exitCode: r.exitCode,
          interrupted: r.interrupted,
          counts: countOf(r.checks),
          nodes: r.nodes,
          checks: r.checks,
        },
        null,
        2,
      ),
    );
    return r.exitCode;
  }
  printEnd(r, { runId, outDir, allure: o.allure !== false }, io);
  return r.exitCode;
}

/** `--tenants 2-7` (the default), `2,4,7`, or `none`; bad input is refused before any node is touched. */
export function tenantsOption(s: string | undefined): number[] {
  if (s === undefined) return [2, 3, 4, 5, 6, 7];
  if (s.trim() === "none") return [];
  const t = parseTenants(s);
  if (!t)
    throw new SlicecheckError(
      "USAGE",
      `--tenants: '${s}' is not a list of tenant counts from 2 to 7 (e.g. 2-7, 2,4,7, or none)`,
    );
  return t;
}
