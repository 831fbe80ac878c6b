// `slicecheck run` as a declared list of tasks over one state (run-state.ts), run in order by
// the TaskList (tasks.ts), each registering its own teardown: connect and lock → discover →
// drain → kernel log → layout (teardown: restore) → interlocks → node records → suites → Xid
// records. What a task is for is decided from the suites' declarations, never their names.
import { SlicecheckError } from "../errors.js";
import type { Read } from "../mig/apply/bundle.js";
import { interlockRefusals } from "../mig/apply/index.js";
import { TOPOLOGY_READS } from "../store/topology.js";
import type { BesideLockOptions } from "../transport/types.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import { BUILD_KEY, buildProbe, builtins } from "../workloads/node-run.js";
import { layoutTask } from "./run-layout.js";
import { readTopologyEarly, recordNodes, recordXids, TOPOLOGY_KEY } from "./run-records.js";
import { codeOf, errText } from "./run-reports.js";
import { live, nodeOf, type RunState } from "./run-state.js";
import { suitesTask } from "./run-suites.js";
import { readStartDmesg } from "./services.js";
import { type NodeSession, openSessions } from "./session.js";
import { drainForRun } from "./slurm-drain.js";
import { anyNeeds } from "./suite-declare.js";
import type { RunTask } from "./tasks.js";

/** One session per node for the whole run, locked unless `lock` is false (`--list`). */
export function connectTask(lock: boolean): RunTask<RunState> {
  return {
    name: lock ? "connect and lock" : "connect",
    run: async (st) => {
      const { o } = st;
      const opened = await openSessions(o.nodes, o.runId, {
        lock,
        command: o.argv.join(" ") || "run",
        concurrency: o.concurrency,
        leaseS: o.leaseS,
        // The discovery that follows, its login beside the lock's (its reads wait for it), and
        // what discovery would start beside it (startEarly).
        discoverEarly: lock,
        withDiscovery: lock ? readsWithDiscovery(st) : {},
        besideLock: (s) => startEarly(st, s, s.readsBesideLock()),
      });
      st.sessions.push(...opened);
      st.tasks.teardown({
        name: "release the node locks and close the connections",
        manual: null,
        run: () => Promise.all(st.sessions.map((s) => s.close())).then(() => {}),
      });
      for (const s of st.sessions)
        if (s.tookOver)
          o.err(
            `${nodeOf(s)}: took over the lock of run ${s.tookOver.runId} (from ${s.tookOver.controller}, since ${s.tookOver.started}): its holder is gone`,
          );
      // Processes of the run die with it: killed at the end by the lease's release (one round
      // trip less per node than a kill of its own), over the session where the lease was lost,
      // and by each connection's watchdog if the controller itself dies.
      if (lock)
        st.tasks.teardown({
          name: "kill whatever the run left on the nodes",
          manual: `slicecheck cleanup --run ${o.runId} ${st.where}`,
          run: async () => {
            const unleased = live(st).filter((s) => !s.releaseKills);
            await Promise.all(unleased.map((s) => s.killRun().catch(() => 0)));
          },
        });
    },
  };
}

/**
 * What a run reads and starts on a node ahead of its need, off the path of the phase that needs
 * it: as the lock's command starts (`exec`: NodeSession.readsBesideLock, whose reads wait on the
 * node for the lease), else as discovery starts. Each starts once per session, so the second
 * call finds them started.
 * - The records' catalogue of the node, where no layout will change it.
 * - The built-in workloads' build check: its answer waits in builtins' cache (an error there is
 *   asked again when a workload needs them). Not before an apply (its nvidia-smi must not meet a
 *   mode change or reset on the node), nor before a drain (a first build's nvcc would load a
 *   node whose tenants' jobs still run).
 * - The first workload phase's supervisor, its login paid here rather than at the phase's start.
 *   Also before an apply or a drain: it is a shell waiting for requests, which opens no GPU
 *   device and loads nothing.
 * `--list` runs nothing: no build check, no supervisor.
 */
function startEarly(st: RunState, s: NodeSession, exec?: BesideLockOptions): void {
  if (topologyEarly(st)) readTopologyEarly(s, exec);
  if (!anyNeeds(st.suites, "runsWorkloads") || st.o.list) return;
  if (buildEarly(st)) builtins(s, exec, s.alongDiscovery(BUILD_KEY)).catch(() => {});
  s.prepareSupervisor();
}

/** Whether the records' catalogue of each node is read ahead of its need (readTopologyEarly):
 * where no layout will change it. */
function topologyEarly(st: RunState): boolean {
  return st.recorder !== null && !st.o.layout;
}

/** Whether the built-in workloads are checked ahead of their need (startEarly says when). */
function buildEarly(st: RunState): boolean {
  const { o } = st;
  return anyNeeds(st.suites, "runsWorkloads") && !o.list && !o.layout && !o.drain;
}

/** What startEarly would read beside the lock, made in the discovery's own call instead: a
 * login each less on the node (each runs its start-up files). */
function readsWithDiscovery(st: RunState): Record<string, readonly Read[]> {
  return {
    ...(topologyEarly(st) ? { [TOPOLOGY_KEY]: TOPOLOGY_READS } : {}),
    ...(buildEarly(st) ? { [BUILD_KEY]: [buildProbe()] } : {}),
  };
}

/** What each node has, read once for every suite; a node that cannot be read is its check. */
export const discoverTask: RunTask<RunState> = {
  name: "discover",
  run: async (st) => {
    st.progress.phase(live(st).map(nodeOf), "discover");
    for (const s of live(st)) startEarly(st, s);
    await Promise.all(
      live(st).map(async (s) => {
        try {
          await s.discover();
        } catch (e) {
          s.error =
            e instanceof SlicecheckError ? e : new SlicecheckError("NODE_COMMAND", errText(e));
          st.pre.push({
            suite: HARNESS_SUITE,
            node: nodeOf(s),
            title: "the node's GPUs can be read",
            status: "broken",
            code: codeOf(e, "NODE_COMMAND"),
            message: errText(e),
          });
        }
      }),
    );
    for (const s of st.sessions) {
      if (!s.error) continue;
      if (!st.pre.some((c) => c.node === nodeOf(s)))
        st.pre.push({
          suite: HARNESS_SUITE,
          node: nodeOf(s),
          title: "the node can be checked",
          status: "broken",
          code: s.error.code,
          message: errText(s.error),
        });
      st.progress.end(nodeOf(s), errText(s.error));
    }
  },
};

const drainTask: RunTask<RunState> = {
  name: "drain the Slurm nodes",
  when: (st) => !!st.o.drain,
  run: async (st) => {
    await drainForRun(st.tasks, live(st), {
      runId: st.o.runId,
      timeoutS: st.o.drain?.timeoutS ?? 600,
      reportToSlurm: st.o.drain?.reportToSlurm ?? false,
      resumeOnlyOnPass: st.o.drain?.resumeOnlyOnPass ?? false,
      owner: st.o.drain?.owner,
      unfitSuites: new Set(st.suites.filter((f) => f.needs?.unfitOnFailure).map((f) => f.name)),
      windows: st.slurmWindows,
      err: st.o.err,
      early: (c) => st.pre.push(c),
      checks: () => st.sink.checks,
    });
  },
};

/** The kernel log at the start, for a suite that judges what the run added to it. */
const kernelLogTask: RunTask<RunState> = {
  name: "read dmesg",
  when: (st) => anyNeeds(st.suites, "readsKernelLog"),
  run: async (st) => {
    st.dmesgAtStart = await readStartDmesg(live(st));
  },
};

/** The layout, restored at the end whatever happens next (unless --keep). */
const applyTask: RunTask<RunState> = {
  name: "layout",
  when: (st) => !!st.o.layout,
  run: async (st) => {
    const { o } = st;
    if (!o.layout) return;
    await layoutTask(o.layout, st.tasks, live(st), st.sessions, {
      runId: o.runId,
      journalDir: o.journalDir,
      allowReset: o.allowReset,
      keep: o.keep,
      regenerateCdi: o.regenerateCdi ?? false,
      where: st.where,
      recorder: st.recorder,
      early: (c) => st.pre.push(c),
      progress: st.progress,
      err: o.err,
    });
  },
};

/** Interlocks for the suites that declare they inject faults: read now, enforced by the API. */
const interlocksTask: RunTask<RunState> = {
  name: "interlocks",
  when: (st) => anyNeeds(st.suites, "injectsFaults"),
  run: async (st) => {
    await Promise.all(
      live(st).map(async (s) => {
        try {
          const r = await interlockRefusals(s, s.node);
          st.refusals.set(nodeOf(s), r.length ? r.join("; ") : null);
        } catch (e) {
          st.refusals.set(
            nodeOf(s),
            `its state could not be read for the interlocks: ${errText(e)}`,
          );
        }
      }),
    );
    for (const [n, why] of st.refusals)
      if (why) st.o.err(`${n}: suites that inject faults are refused: ${why}`);
  },
};

/** Records: each node's inventory and live catalogue while the run's layout is in place. */
const nodeRecordsTask: RunTask<RunState> = {
  name: "record the nodes",
  when: (st) => !!st.recorder,
  run: async (st) => {
    if (st.recorder)
      await recordNodes(st.recorder, st.sessions, st.o.layout?.config.name ?? null, errText);
  },
};

/** Xids the run saw, for the records (health judges them; diff and readers keep them). */
const xidRecordsTask: RunTask<RunState> = {
  name: "record the Xids",
  when: (st) => !!st.recorder && anyNeeds(st.suites, "readsKernelLog"),
  run: async (st) => {
    if (st.recorder) await recordXids(st.recorder, live(st), st.dmesgAtStart);
  },
};

/** The run, in order. */
export const RUN_TASKS: readonly RunTask<RunState>[] = [
  connectTask(true),
  discoverTask,
  drainTask,
  kernelLogTask,
  applyTask,
  interlocksTask,
  nodeRecordsTask,
  suitesTask,
  xidRecordsTask,
];
