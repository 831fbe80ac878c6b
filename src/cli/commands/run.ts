// `slicecheck run`: a thin adapter from options to the harness (src/harness/run.ts). Everything
// about the input is checked here, before any node is touched; the end of the run lists every
// failed and broken check with its reason, then the verdict.
import { join } from "node:path";
import { parseFaults, parseLatencyFaults } from "../../chaos/isolation.js";
import { runHarness } from "../../harness/run.js";
import { declareSuites } from "../../harness/suite-declare.js";
import { resolveSuites } from "../../harness/suites.js";
import { DEFAULT_JOURNAL_DIR, validateOffline } from "../../mig/apply/index.js";
import { selectConfig } from "../../mig/layout/index.js";
import { dbPath } from "../../store/db.js";
import { newRunId } from "../../transport/open.js";
import { DEFAULT_POLICY } from "../../verdicts/coverage.js";
import { currentSettings } from "../config/resolve.js";
import { displayPath, loadSelected, type Out } from "../context.js";
import { loadLayoutInput } from "../input.js";
import { checkRunPaths } from "../options.js";
import { progressView, viewMode } from "../progress-view.js";
import {
  checkLayoutSuites,
  checkRunOptions,
  checkSlurmOptions,
  localNode,
  type RunCliOptions,
  tenantsOption,
} from "./run-options.js";
import { liveCheck, printEnd, printJson, printList } from "./run-print.js";
import { viaSlurm } from "./run-via.js";

/** `--drain` and what a rollout adds to it (resume only on pass, its id in the reasons). */
function drainOf(o: RunCliOptions) {
  if (!o.drain) return null;
  return {
    timeoutS: o.drainTimeout ?? 600,
    reportToSlurm: o.reportToSlurm ?? false,
    resumeOnlyOnPass: o.resumeOnlyOnPass ?? false,
    owner: o.drainOwner,
  };
}

export async function runCommand(o: RunCliOptions, io: Out): Promise<number> {
  checkRunPaths(o, dbPath(o.db));
  const resolved = resolveSuites(o.suites);
  const faults = parseFaults(o.faults);
  const latencyFaults = parseLatencyFaults(o.latencyFaults);
  const tenants = tenantsOption(o.tenants);
  const config = o.layout ? selectConfig(await loadLayoutInput(o.layout), o.config) : null;
  if (config && o.layout) validateOffline(config, o.layout);
  // What each suite declares, read (and a file that does not load refused) before any node.
  const suites = await declareSuites(resolved, {
    runId: o.runId ?? "declaring",
    durationS: o.duration,
    tolerance: o.tolerance ?? 0.05,
    faults,
    aggressors: o.aggressors ?? null,
    busbwFloorGBs: o.busbwFloor ?? null,
    tenants,
    layout: config && o.layout ? { file: o.layout, config: config.name } : null,
    outDir: o.out ?? "",
  });
  checkRunOptions(o);
  const { inventory, nodes } = loadSelected(o);
  checkSlurmOptions(o, nodes);
  checkLayoutSuites(o, suites, nodes);
  if (o.local) localNode(nodes, o.reservation);
  const runId = o.runId ?? newRunId();
  if (o.via !== undefined)
    return viaSlurm(o, { inventory: inventory.file, nodes, suites, runId }, io);
  const outDir = o.out ?? join("reports", "runs", runId);
  if (!o.list)
    io.err(
      `run ${runId}: ${suites.map((s) => s.name).join(",")} on ${nodes.length} node(s), ${o.duration} s each; output in ${displayPath(outDir)}`,
    );
  const view = await progressView(viewMode(o, io), io);
  const r = await runHarness({
    runId,
    nodes,
    inventoryFile: inventory.file,
    suites,
    outDir,
    durationS: o.duration,
    tolerance: o.tolerance ?? 0.05,
    faults,
    latencyFaults,
    aggressors: o.aggressors ?? null,
    busbwFloorGBs: o.busbwFloor ?? null,
    tenants,
    layout: config && o.layout ? { file: o.layout, config } : null,
    keep: o.keep ?? false,
    allowReset: o.allowReset ?? false,
    regenerateCdi: o.regenerateCdi ?? false,
    leaseS: o.lease,
    drain: drainOf(o),
    reservation: o.reservation ?? null,
    journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
    db: dbPath(o.db),
    dbTimeoutMs: (o.dbTimeout ?? 30) * 1000,
    label: o.label ?? null,
    argv: process.argv.slice(2),
    grep: o.grep,
    bail: o.bail,
    list: o.list,
    allure: o.allure !== false,
    concurrency: o.concurrency ?? 64,
    signoffPolicy: currentSettings().signoff ?? DEFAULT_POLICY,
    containers: currentSettings().containers ?? null,
    events: (e) => view.event(e),
    onCheck: (c) => showCheck(c, o.json ? null : view),
    err: (line) => view.message(line),
  }).finally(() => view.stop());
  if (o.list) {
    const code = printList(r.listed ?? [], suites.length, nodes.length, runId, o.json, io);
    // A --grep that listed nothing is the run's usage error (3), as it would be when running.
    return r.exitCode === 3 ? 3 : code;
  }
  if (o.json) return printJson(r, runId, io, outDir);
  printEnd(r, { runId, outDir, allure: o.allure !== false }, io);
  return r.exitCode;
}

/** A check as it ends, on the live view (not under --json, whose output is the checks). */
function showCheck(c: Parameters<typeof liveCheck>[0], view: { message(l: string): void } | null) {
  const line = view ? liveCheck(c) : null;
  if (line) view?.message(line);
}
