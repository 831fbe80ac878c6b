// `slicecheck run`: the suites' declarations read before any node is touched, then one of two
// declared task lists over one run state: the run (run-tasks.ts: connect and lock, discover,
// drain, kernel log, layout with its restore, interlocks, records, suites) or `--list`
// (list-tasks.ts). Every node's failure is that node's: it becomes broken checks, and the others
// go on. The run's end (records, reports) comes in every case: after a refused or failed apply
// and after an interrupt.
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SlicecheckError } from "../errors.js";
import { intendedGroups } from "../mig/apply/intended.js";
import { Recorder, type RunStatus } from "../store/recorder.js";
import { statusOfExit } from "../util/status.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import { CheckSink, exitOf } from "../verdicts/checks.js";
import { checksFileWriter } from "./context.js";
import { LIST_TASKS } from "./list-tasks.js";
import { freshOutDir, PREVIOUS_RUN } from "./out-dir.js";
import { RunProgress } from "./progress.js";
import { codeOf, errText, writeReports } from "./run-reports.js";
import {
  type HarnessRunOptions,
  type HarnessRunResult,
  nodeOf,
  optionsView,
  type RunState,
} from "./run-state.js";
import { RUN_TASKS } from "./run-tasks.js";
import { SlurmJobWindows } from "./slurm-drain.js";
import { anyNeeds, declareSuites } from "./suite-declare.js";
import type { SuiteFile } from "./suites.js";
import { interruptExitCode, type RunTask, TaskList } from "./tasks.js";

export type { HarnessRunOptions, HarnessRunResult } from "./run-state.js";

/** The state every task of the run shares, before any of them ran. */
function newState(o: HarnessRunOptions, suites: SuiteFile[], startedMs: number): RunState {
  const sink = new CheckSink();
  const layout = !!o.layout && !o.list;
  const progress = new RunProgress(o.events ?? (() => {}), {
    layout,
    restore: layout && !o.keep,
    concurrency: o.concurrency,
  });
  sink.on((c) => progress.unit(c));
  return {
    o,
    suites,
    startedMs,
    view: optionsView(o),
    tasks: new TaskList(),
    sink,
    progress,
    recorder: null,
    sessions: [],
    pre: [],
    where: `-i ${o.inventoryFile} --nodes ${o.nodes.map((n) => n.name).join(",")}`,
    slurmWindows: new SlurmJobWindows(o.runId, o.reservation ?? null),
    dmesgAtStart: new Map(),
    refusals: new Map(),
    selected: null,
  };
}

/** The run's output folder, its checks file and its records, before any node is touched. */
async function openRun(st: RunState, removeSignals: () => void): Promise<void> {
  const { o, sink } = st;
  if (freshOutDir(o.outDir).length > 0)
    o.err(
      `${o.outDir} held a previous run: its results are moved to ${join(o.outDir, PREVIOUS_RUN)}`,
    );
  sink.on(checksFileWriter(o.outDir));
  if (o.onCheck) sink.on(o.onCheck);
  st.progress.start(
    o.nodes.map((n) => n.name),
    st.suites,
    o.durationS,
  );
  st.recorder = await Recorder.start(o.db, {
    runId: o.runId,
    label: o.label ?? undefined,
    argv: o.argv,
    timeoutMs: o.dbTimeoutMs,
  }).catch((e: unknown) => {
    // An unreachable database stops the run before any node is touched; the signal
    // handlers must not outlive it (in-process callers go on).
    removeSignals();
    throw e;
  });
  const recorder = st.recorder;
  sink.on((c) => recorder.check(c));
}

/** Runs the task list; whatever happens, the harness's own checks and every teardown follow. */
async function runTaskList(st: RunState, list: readonly RunTask<RunState>[]): Promise<void> {
  const { tasks, sink } = st;
  const broken = (title: string, e: unknown) =>
    sink.harness({
      suite: HARNESS_SUITE,
      title,
      status: "broken",
      code: codeOf(e),
      message: errText(e),
    });
  try {
    await tasks.run(list, st);
  } catch (e) {
    for (const p of st.pre.splice(0)) sink.harness(p);
    broken("the run completes", e);
  } finally {
    for (const p of st.pre.splice(0)) sink.harness(p);
    await tasks.tearDown((name, e) => {
      st.o.err(`slicecheck: ${name} failed: ${errText(e)}`);
      broken(name, e);
    });
    for (const n of st.o.nodes) st.progress.end(n.name);
  }
}

/** A --grep that selects nothing would otherwise pass with no check: a typo in a nightly job's
 * pattern must not turn into a green run. Known only once the nodes' tests exist. */
function grepMatchedNothing(st: RunState): boolean {
  const { o, tasks } = st;
  const n = o.list ? st.listed?.length : st.selected;
  if (o.grep === undefined || tasks.interrupted || n !== 0) return false;
  o.err(
    `slicecheck: --grep ${JSON.stringify(o.grep)} matched no test on ${o.nodes.length} node(s); \`slicecheck run --list\` shows the titles it is matched against`,
  );
  return true;
}

/** Records, then reports: the run's end, also after an interrupt. Returns the exit code. */
async function finishRun(st: RunState, exitCode: number): Promise<number> {
  const { o, tasks, recorder, sink } = st;
  const { spans } = tasks;
  // Before the reports, so that a lost record is in them too; durable from here on (settle).
  const lost = await spans.time("write the records", async () => recorder?.settle());
  if (lost) {
    // A record that did not make it is no failure of the node, but the run cannot claim a
    // complete history: diff and regression would compare against a hole.
    const c = sink.harness({
      suite: HARNESS_SUITE,
      title: "the run's records are written",
      status: "broken",
      code: codeOf(lost, "WRITE"),
      message: `${errText(lost)} (records in ${recorder?.location}; the checks are in ${o.outDir}/checks.jsonl)`,
    });
    o.err(`slicecheck: ${c.message}`);
    if (!tasks.interrupted && exitCode === 0) exitCode = 2;
  }
  const code = spans.timeSync("write the reports", () =>
    writeReports(o, sink, st.sessions, {
      exitCode,
      interrupted: tasks.interrupted,
      startedMs: st.startedMs,
    }),
  );
  const status: RunStatus = tasks.interrupted ? "interrupted" : statusOfExit(code);
  await spans.time("close the records", async () => recorder?.finish(status));
  return code;
}

function resultOf(st: RunState, exitCode: number): HarnessRunResult {
  return {
    runId: st.o.runId,
    exitCode,
    interrupted: st.tasks.interrupted,
    checks: st.sink.checks,
    nodes: st.sessions.map((s) => ({
      node: nodeOf(s),
      driver: s.discovered?.driver ?? null,
      cuda: s.discovered?.cuda ?? null,
      error: s.error ? errText(s.error) : null,
      connections: s.connectionsOpened,
      extraConnections: s.extraConnections,
      tookOver: s.tookOver?.runId ?? null,
    })),
    listed: st.listed,
    outDir: st.o.outDir,
    tasks: st.tasks.spans.list,
  };
}

/** A suite that checks the layout needs --layout, or every node's intended layout (loaded and
 * planned offline here, so a bad one is refused before any node is touched). */
function checkLayoutNeeds(o: HarnessRunOptions, suites: readonly SuiteFile[]): void {
  if (!anyNeeds(suites, "needsLayout") || o.layout) return;
  const names = suites.filter((f) => f.needs?.needsLayout).map((f) => f.name);
  if (o.nodes.length > 0 && o.nodes.every((n) => n.intended)) {
    intendedGroups(o.nodes, true);
    return;
  }
  throw new SlicecheckError(
    "USAGE",
    `--suites ${names.join(",")} checks the layout a run applies, or each node's intended layout; give --layout FILE -c NAME, or mig_config for ${o.nodes
      .filter((n) => !n.intended)
      .map((n) => n.name)
      .join(", ")} in the inventory`,
  );
}

export async function runHarness(o: HarnessRunOptions): Promise<HarnessRunResult> {
  const startedMs = Date.now();
  const entered = performance.now();
  // A suite file that does not load is bad input, found before anything else happens.
  const suites = await declareSuites(o.suites, optionsView(o));
  checkLayoutNeeds(o, suites);
  const st = newState(o, suites, startedMs);
  st.tasks.spans.add("read the suites' declarations", entered);
  const removeSignals = st.tasks.onSignals({ err: o.err }, o.exit ?? ((c) => process.exit(c)));
  if (!o.list) await st.tasks.spans.time("open the records", () => openRun(st, removeSignals));
  try {
    await runTaskList(st, o.list ? LIST_TASKS : RUN_TASKS);
  } finally {
    removeSignals();
  }
  let exitCode = st.tasks.interrupted
    ? interruptExitCode(st.tasks.interruptedBy)
    : exitOf(st.sink.checks);
  if (grepMatchedNothing(st)) exitCode = 3;
  if (!o.list) exitCode = await finishRun(st, exitCode);
  return resultOf(st, exitCode);
}
