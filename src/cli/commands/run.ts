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
import { loadLayout, selectConfig } from "../../mig/layout/index.js";
import { dbPath } from "../../store/db.js";
import { newRunId } from "../../transport/open.js";
import { type CheckRecord, countOf } from "../../verdicts/checks.js";
import { displayPath, loadSelected, type NodeOptions, type Out } from "../context.js";
import { checkRunPaths } from "../options.js";

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
}

const MARK = { passed: "ok", failed: "FAILED", broken: "BROKEN", skipped: "skipped" } as const;

function where(c: CheckRecord): string {
  return [
    c.node,
    c.gpu === null ? null : `GPU ${c.gpu}`,
    c.instance ? `${c.instance.profile}@${c.instance.placement ?? "-"}` : null,
  ]
    .filter(Boolean)
    .join(" ");
}

function figure(c: CheckRecord): string {
  const f = c.figures;
  if (typeof f.tflops === "number") return ` ${f.tflops.toFixed(2)} TFLOP/s`;
  if (typeof f.algbw === "number") return ` ${f.algbw.toFixed(2)} GB/s`;
  return "";
}

export async function runCommand(o: RunCliOptions, io: Out): Promise<number> {
  checkRunPaths(o, dbPath(o.db));
  const suites = resolveSuites(o.suites);
  const faults = parseFaults(o.faults);
  const tenants = tenantsOption(o.tenants);
  const config = o.layout ? selectConfig(loadLayout(o.layout), o.config) : null;
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
  const { inventory, nodes } = loadSelected(o);
  const runId = newRunId();
  const outDir = o.out ?? join("reports", "runs", runId);
  const started = Date.now();
  const stamp = () => `[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s]`;
  if (!o.list)
    io.err(
      `run ${runId}: ${suites.map((s) => s.name).join(",")} on ${nodes.length} node(s), ${o.duration} s each; output in ${displayPath(outDir)}`,
    );
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
    journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
    db: dbPath(o.db),
    label: o.label ?? null,
    argv: process.argv.slice(2),
    grep: o.grep,
    bail: o.bail,
    list: o.list,
    allure: o.allure !== false,
    concurrency: o.concurrency ?? 64,
    progress: (line) => {
      if (!o.json) io.err(`${stamp()} ${line}`);
    },
    onCheck: (c) => {
      if (!o.json)
        io.err(`${stamp()} ${MARK[c.status]} ${c.suite} ${where(c)}: ${c.title}${figure(c)}`);
    },
    err: (line) => io.err(line),
  });
  if (o.list) {
    const listed = r.listed ?? [];
    if (o.json) io.out(JSON.stringify({ runId, tests: listed }, null, 2));
    else {
      for (const t of listed) io.out(`${t.suite}: ${[...t.path.slice(1), t.title].join(" › ")}`);
      io.out(`${listed.length} test(s) in ${suites.length} suite(s) on ${nodes.length} node(s)`);
    }
    return 0;
  }
  const counts = countOf(r.checks);
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          runId,
          exitCode: r.exitCode,
          interrupted: r.interrupted,
          counts,
          nodes: r.nodes,
          checks: r.checks,
        },
        null,
        2,
      ),
    );
    return r.exitCode;
  }
  const bad = r.checks.filter((c) => c.status === "failed" || c.status === "broken");
  if (bad.length > 0) {
    io.out("");
    io.out("Checks that did not pass:");
    for (const c of bad) {
      const ev = c.evidence.find((e) => e.path)?.path;
      io.out(`  ${MARK[c.status]} [${c.code}] ${c.suite} ${where(c)}: ${c.title}`);
      io.out(`      ${c.message}`);
      if (ev) io.out(`      evidence: ${displayPath(ev)}`);
    }
  }
  if (
    r.checks.some(
      (c) =>
        c.suite === "isolation" &&
        c.parameters.mode &&
        !["mig", "exclusive"].includes(c.parameters.mode),
    )
  )
    io.out(
      "note: time-slicing and MPS are soft routes, not isolation: processes share the GPU's throughput (and, without a pinned memory limit, its memory), and under MPS one client's fatal fault kills the others; what a route does not promise is reported as a characterisation (code CHARACTERISED) with its figure, and only a broken promise fails",
    );
  io.out("");
  io.out(
    `reports: ${displayPath(join(outDir, "junit.xml"))}, ${displayPath(join(outDir, "checks.jsonl"))}${o.allure !== false ? `, Allure results in ${displayPath(join(outDir, "allure-results"))} (\`slicecheck report --results ${join(outDir, "allure-results")}\`)` : ""}`,
  );
  io.out(
    `${counts.passed} passed, ${counts.failed} failed, ${counts.broken} broken, ${counts.skipped} skipped`,
  );
  const verdict = r.interrupted
    ? "INTERRUPTED: the figures measured so far are kept; the run is recorded as interrupted"
    : r.exitCode === 0
      ? "PASSED: every check passed"
      : r.exitCode === 1
        ? "FAILED: a check failed (see above)"
        : "BROKEN: some checks could not be decided (see above); nothing failed";
  io.out(`run ${runId}: ${verdict}`);
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
