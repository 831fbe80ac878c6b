// `slicecheck run` as an ordered task list with teardowns: connect and lock → dmesg → apply
// (teardown: restore) → interlocks → suites → record → reports. Every node's failure is that
// node's: it becomes broken checks, and the others go on. Reports are written in every case:
// after a refused or failed apply and after an interrupt.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../errors.js";
import { interlockRefusals } from "../mig/apply/index.js";
import { CATEGORIES, environmentOf } from "../report/suites.js";
import { Recorder, type RunStatus } from "../store/recorder.js";
import { regressionChecks } from "../store/regression.js";
import { type CheckRecord, CheckSink, exitOf } from "../verdicts/checks.js";
import type { RunOptionsView } from "./api-types.js";
import { checksFileWriter, HarnessContext } from "./context.js";
import { listSuites, type PreCheck, runSuites } from "./mocha-run.js";
import { freshOutDir, PREVIOUS_RUN } from "./out-dir.js";
import { RunProgress } from "./progress.js";
import { layoutTask } from "./run-layout.js";
import type { HarnessRunOptions } from "./run-options.js";
import { recordMeasurements, recordNodes, recordXids } from "./run-records.js";
import { codeOf, errText, writeReports } from "./run-reports.js";
import {
  healthOf,
  isolationHistory,
  isolationOf,
  layoutOf,
  readStartDmesg,
  viewOfExtra,
} from "./services.js";
import { type NodeSession, openSessions } from "./session.js";
import { drainForRun, SlurmJobWindows } from "./slurm-drain.js";
import { interruptExitCode, TaskList } from "./tasks.js";

export interface HarnessRunResult {
  runId: string;
  exitCode: number;
  interrupted: boolean;
  checks: CheckRecord[];
  nodes: {
    node: string;
    driver: string | null;
    cuda: string | null;
    error: string | null;
    connections: number;
    tookOver: string | null;
  }[];
  listed?: { suite: string; path: string[]; title: string }[];
  outDir: string;
}

const SUITE_LABELS: Record<string, { epic: string; feature: string; severity: string }> = {
  stress: { epic: "MIG partition validation", feature: "Stress", severity: "normal" },
  nccl: { epic: "MIG partition validation", feature: "NCCL", severity: "normal" },
  isolation: { epic: "Tenant isolation", feature: "Isolation", severity: "critical" },
  layout: { epic: "MIG partition validation", feature: "Layout", severity: "normal" },
  health: { epic: "MIG partition validation", feature: "GPU health", severity: "critical" },
  slurm: { epic: "MIG partition validation", feature: "Slurm", severity: "critical" },
  regression: {
    epic: "MIG partition validation",
    feature: "Driver regression",
    severity: "normal",
  },
};

export async function runHarness(o: HarnessRunOptions): Promise<HarnessRunResult> {
  const startedMs = Date.now();
  const tasks = new TaskList();
  const sink = new CheckSink();
  if (o.list) mkdirSync(o.outDir, { recursive: true });
  else if (freshOutDir(o.outDir).length > 0)
    o.err(
      `${o.outDir} held a previous run: its results are moved to ${join(o.outDir, PREVIOUS_RUN)}`,
    );
  sink.on(checksFileWriter(o.outDir));
  if (o.onCheck) sink.on(o.onCheck);
  const ev = o.events ?? (() => {});
  const progress = new RunProgress(ev, { layout: !!o.layout, restore: !!o.layout && !o.keep });
  sink.on((c) => progress.unit(c));
  if (!o.list)
    progress.start(
      o.nodes.map((n) => n.name),
      o.suites,
      o.durationS,
    );
  const removeSignals = tasks.onSignals({ err: o.err }, o.exit ?? ((c) => process.exit(c)));
  const recorder = o.list
    ? null
    : await Recorder.start(o.db, {
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
  if (recorder) sink.on((c) => recorder.check(c));
  const measurementsFile = join(o.outDir, "measurements.jsonl");
  const sessions: NodeSession[] = [];
  const nodeOf = (s: NodeSession) => s.node.name;
  const where = `-i ${o.inventoryFile} --nodes ${o.nodes.map((n) => n.name).join(",")}`;
  // Checks the harness decides before the suites run; they go through the mocha run (so every
  // report has them), or straight to the sink if the run never gets there.
  const pre: PreCheck[] = [];
  const early = (c: PreCheck) => pre.push(c);
  let listed: HarnessRunResult["listed"];
  /** The tests the run selected over all nodes (after --grep); null until the suites load. */
  let selected: number | null = null;
  let exitCode = 0;
  try {
    // 1. One session per node, locked for the whole run.
    const opened = await tasks.task("connect and lock", () =>
      openSessions(o.nodes, o.runId, {
        lock: !o.list,
        command: o.argv.join(" ") || "run",
        concurrency: o.concurrency,
        leaseS: o.leaseS,
      }),
    );
    sessions.push(...(opened ?? []));
    tasks.teardown({
      name: "release the node locks and close the connections",
      manual: null,
      run: () => Promise.all(sessions.map((s) => s.close())).then(() => {}),
    });
    for (const s of sessions) {
      if (s.tookOver)
        o.err(
          `${nodeOf(s)}: took over the lock of run ${s.tookOver.runId} (from ${s.tookOver.controller}, since ${s.tookOver.started}): its holder is gone`,
        );
    }
    // Processes of the run die with it: killed at the end over the session, and by each
    // connection's watchdog if the controller itself dies.
    tasks.teardown({
      name: "kill whatever the run left on the nodes",
      manual: `slicecheck cleanup --run ${o.runId} ${where}`,
      run: async () => {
        await Promise.all(sessions.filter((s) => !s.error).map((s) => s.killRun().catch(() => 0)));
      },
    });
    const live = () => sessions.filter((s) => !s.error);
    progress.phase(live().map(nodeOf), "discover");
    // 2. What each node has, read once for every suite.
    await tasks.task("discover", async () => {
      await Promise.all(
        live().map(async (s) => {
          try {
            await s.discover();
          } catch (e) {
            s.error = isSlicecheckError(e) ? e : null;
            early({
              suite: "run",
              node: nodeOf(s),
              title: "the node's GPUs can be read",
              status: "broken",
              code: codeOf(e, "NODE_COMMAND"),
              message: errText(e),
            });
            if (!s.error)
              s.error = new (await import("../errors.js")).SlicecheckError(
                "NODE_COMMAND",
                errText(e),
              );
          }
        }),
      );
    });
    for (const s of sessions)
      if (s.error && !pre.some((c) => c.node === nodeOf(s)))
        early({
          suite: "run",
          node: nodeOf(s),
          title: "the node can be checked",
          status: "broken",
          code: s.error.code,
          message: errText(s.error),
        });
    for (const s of sessions) if (s.error) progress.end(nodeOf(s), errText(s.error));
    const slurmWindows = new SlurmJobWindows(o.runId, o.reservation ?? null);
    if (o.drain && !o.list) {
      const drain = o.drain;
      await tasks.task("drain the Slurm nodes", () =>
        drainForRun(tasks, live(), {
          runId: o.runId,
          ...drain,
          windows: slurmWindows,
          err: o.err,
          early,
          checks: () => sink.checks,
        }),
      );
    }
    const wantsHealth = o.suites.some((f) => f.name === "health");
    const dmesgAtStart =
      wantsHealth && !o.list
        ? ((await tasks.task("read dmesg", () => readStartDmesg(live()))) ?? new Map())
        : new Map();
    // 3. The layout, restored at the end whatever happens next (unless --keep).
    if (o.layout && !o.list)
      await layoutTask(o.layout, tasks, live(), sessions, {
        runId: o.runId,
        journalDir: o.journalDir,
        allowReset: o.allowReset,
        keep: o.keep,
        where,
        recorder,
        early,
        progress,
        err: o.err,
      });
    // 4. Interlocks for every suite that injects faults: read now, enforced by the suite API.
    const refusals = new Map<string, string | null>();
    if (!o.list && o.suites.some((f) => f.name === "isolation" || !f.builtin)) {
      await tasks.task("interlocks", () =>
        Promise.all(
          live().map(async (s) => {
            try {
              const r = await interlockRefusals(s, s.node);
              refusals.set(nodeOf(s), r.length ? r.join("; ") : null);
            } catch (e) {
              refusals.set(
                nodeOf(s),
                `its state could not be read for the interlocks: ${errText(e)}`,
              );
            }
          }),
        ),
      );
    }
    for (const [n, why] of refusals)
      if (why) o.err(`${n}: suites that inject faults are refused: ${why}`);
    // Records: each node's inventory and live catalogue while the run's layout is in place.
    if (recorder) await recordNodes(recorder, sessions, o.layout?.config.name ?? null, errText);
    // 5. The suites, live.
    const history = isolationHistory(o.outDir);
    const view: RunOptionsView = {
      runId: o.runId,
      durationS: o.durationS,
      tolerance: o.tolerance,
      faults: o.faults,
      aggressors: o.aggressors,
      tenants: o.tenants,
      layout: o.layout ? { file: o.layout.file, config: o.layout.config.name } : null,
      outDir: o.outDir,
    };
    const ctx = new HarnessContext(
      sessions,
      view,
      sink,
      {
        health: (s) => healthOf(s, dmesgAtStart, sink),
        layout: (s) =>
          layoutOf(s, o.layout?.config ?? null, { runId: o.runId, journalDir: o.journalDir }),
        regressions: async () => {
          if (!recorder) return [];
          // This run's own measurements must be in before they are compared.
          await recorder.flush();
          return (await regressionChecks(recorder.store, o.runId, o.tolerance)).map(viewOfExtra);
        },
        isolation: (s, node) =>
          isolationOf(s, node, {
            runId: o.runId,
            faults: o.faults,
            durationS: o.durationS,
            aggressors: o.aggressors ?? undefined,
            tenants: o.tenants,
            outDir: o.outDir,
            history,
            tolerance: o.tolerance,
            signal: tasks.signal,
            // The scenario's part (baseline, then each fault) is the node's phase detail.
            onProgress: (line) =>
              progress.phase([nodeOf(s)], "isolation", line.replace(`${nodeOf(s)} `, ""), true),
          }),
        measured: (suite, outcomes) =>
          recordMeasurements(recorder, measurementsFile, o.runId, suite, outcomes),
        slurmJobs: (s) => slurmWindows.for(s),
      },
      refusals,
      tasks.signal,
      o.concurrency,
    );
    ctx.onProgress = ev;
    ctx.install();
    try {
      if (o.list) {
        listed = await listSuites(ctx, o.suites, o.runId, o.grep);
      } else {
        const nodes = [...ctx.views.values()];
        const ran = await tasks.task("suites", () =>
          runSuites(ctx, {
            files: o.suites,
            grep: o.grep,
            bail: o.bail,
            allureResults: o.allure ? join(o.outDir, "allure-results") : null,
            environmentInfo: environmentOf({
              runId: o.runId,
              label: o.label,
              suites: o.suites.map((f) => f.name),
              layout: view.layout,
              nodes: nodes.map((n) => ({
                node: n.name,
                driver: n.driver,
                cuda: n.cuda,
                gpus: n.gpus.map((g) => g.name),
              })),
            }),
            categories: CATEGORIES,
            parameters: (node) => {
              const n = node ? ctx.views.get(node) : undefined;
              return {
                driver: n?.driver ?? "unknown",
                CUDA: n?.cuda ?? "unknown",
                layout: view.layout ? `${view.layout.file} -c ${view.layout.config}` : "as found",
              };
            },
            preChecks: pre.splice(0),
            planned: (steps) => {
              for (const [node, list] of steps) progress.plan(node, list);
              selected = [...steps.values()].flat().reduce((n, st) => n + st.units, 0);
            },
            labels: (suite) =>
              SUITE_LABELS[suite] ?? { epic: "Site checks", feature: suite, severity: "normal" },
            runId: o.runId,
          }),
        );
        const lost = ran?.writeErrors ?? [];
        if (lost.length > 0)
          sink.harness({
            suite: "run",
            title: "the Allure results are written",
            status: "broken",
            code: codeOf(lost[0], "WRITE"),
            message: `${lost.length} Allure write(s) failed or were skipped in ${join(o.outDir, "allure-results")} (${errText(lost[0])}); free space there or give --out another folder`,
          });
      }
    } finally {
      ctx.uninstall();
    }
    // Xids the run saw, for the records (health judges them; diff and readers keep them).
    if (recorder && wantsHealth) await recordXids(recorder, live(), dmesgAtStart);
  } catch (e) {
    for (const p of pre.splice(0)) sink.harness(p);
    sink.harness({
      suite: "run",
      title: "the run completes",
      status: "broken",
      code: codeOf(e),
      message: errText(e),
    });
  } finally {
    for (const p of pre.splice(0)) sink.harness(p);
    await tasks.tearDown((name, e) => {
      o.err(`slicecheck: ${name} failed: ${errText(e)}`);
      sink.harness({
        suite: "run",
        title: name,
        status: "broken",
        code: codeOf(e),
        message: errText(e),
      });
    });
    removeSignals();
    for (const n of o.nodes) progress.end(n.name);
  }
  exitCode = tasks.interrupted ? interruptExitCode(tasks.interruptedBy) : exitOf(sink.checks);
  if (o.grep !== undefined && !tasks.interrupted && (o.list ? listed?.length : selected) === 0) {
    // A --grep that selects nothing would otherwise pass with no check: a typo in a nightly job's
    // pattern must not turn into a green run. Known only once the nodes' tests exist.
    o.err(
      `slicecheck: --grep ${JSON.stringify(o.grep)} matched no test on ${o.nodes.length} node(s); \`slicecheck run --list\` shows the titles it is matched against`,
    );
    exitCode = 3;
  }
  // Before the reports, so that a lost record is in them too.
  const lost = await recorder?.flush();
  if (lost) {
    // A record that did not make it is no failure of the node, but the run cannot claim a
    // complete history: diff and regression would compare against a hole.
    const c = sink.harness({
      suite: "run",
      title: "the run's records are written",
      status: "broken",
      code: codeOf(lost, "WRITE"),
      message: `${errText(lost)} (records in ${recorder?.location}; the checks are in ${o.outDir}/checks.jsonl)`,
    });
    o.err(`slicecheck: ${c.message}`);
    if (!tasks.interrupted && exitCode === 0) exitCode = 2;
  }
  const nodes = sessions.map((s) => ({
    node: nodeOf(s),
    driver: s.discovered?.driver ?? null,
    cuda: s.discovered?.cuda ?? null,
    error: s.error ? errText(s.error) : null,
    connections: s.connectionsOpened,
    tookOver: s.tookOver?.runId ?? null,
  }));
  if (!o.list)
    exitCode = writeReports(o, sink, sessions, {
      exitCode,
      interrupted: tasks.interrupted,
      startedMs,
    });
  const status: RunStatus = tasks.interrupted
    ? "interrupted"
    : ((["passed", "failed", "broken"] as const)[exitCode] ?? "broken");
  await recorder?.finish(status);

  return {
    runId: o.runId,
    exitCode,
    interrupted: tasks.interrupted,
    checks: sink.checks,
    nodes,
    listed,
    outDir: o.outDir,
  };
}
