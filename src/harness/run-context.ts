// The suite API's run (HarnessContext) built over a run's state: the engines behind the
// built-in suites' calls (health, layout, regressions, isolation) wired to the run's records,
// its kernel logs read at the start, its layout and its progress.
import { join } from "node:path";
import { regressionChecks } from "../store/regression.js";
import { HarnessContext } from "./context.js";
import { recordMeasurements } from "./run-records.js";
import { nodeOf, type RunState } from "./run-state.js";
import { healthOf, isolationHistory, isolationOf, layoutOf, viewOfExtra } from "./services.js";
import type { NodeSession } from "./session.js";

function isolationService(st: RunState) {
  const { o, tasks, progress } = st;
  const history = isolationHistory(o.outDir);
  return (s: NodeSession, node: Parameters<typeof isolationOf>[1], suite: string) =>
    isolationOf(s, node, {
      runId: o.runId,
      faults: o.faults,
      latencyFaults: o.latencyFaults,
      durationS: o.durationS,
      aggressors: o.aggressors ?? undefined,
      tenants: o.tenants,
      aggressorContainer: aggressorContainerOf(node, o.containers),
      outDir: o.outDir,
      history,
      tolerance: o.tolerance,
      signal: tasks.signal,
      // The scenario's part (baseline, then each fault) is the node's phase detail.
      onProgress: (line) =>
        progress.phase([nodeOf(s)], suite, line.replace(`${nodeOf(s)} `, ""), true),
    });
}

/** `containers: {aggressor: IMAGE}` of the node's inventory, else of the config file: the
 * isolation suite's aggressor then faults inside a container (issue 23). */
function aggressorContainerOf(
  node: Parameters<typeof isolationOf>[1],
  config: Record<string, string> | null | undefined,
) {
  const image = node.containers?.images.aggressor ?? config?.aggressor;
  return image ? { image, runtime: node.containers?.runtime ?? null } : null;
}

export function suiteContext(st: RunState): HarnessContext {
  const { o, recorder, sink } = st;
  const measurementsFile = join(o.outDir, "measurements.jsonl");
  const faultSuites = new Set(st.suites.filter((f) => f.needs?.injectsFaults).map((f) => f.name));
  const ctx = new HarnessContext(
    st.sessions,
    st.view,
    sink,
    {
      health: (s) => healthOf(s, st.dmesgAtStart, sink, faultSuites),
      layout: (s) =>
        layoutOf(s, o.layout?.config ?? null, { runId: o.runId, journalDir: o.journalDir }),
      regressions: async () => {
        if (!recorder) return [];
        // This run's own measurements must be in before they are compared.
        await recorder.flush();
        return (await regressionChecks(recorder.store, o.runId, o.tolerance)).map(viewOfExtra);
      },
      isolation: isolationService(st),
      measured: (suite, outcomes) =>
        recordMeasurements(recorder, measurementsFile, o.runId, suite, outcomes),
      slurmJobs: (s) => st.slurmWindows.for(s),
    },
    st.refusals,
    st.tasks.signal,
    o.concurrency,
  );
  ctx.onProgress = o.events ?? (() => {});
  return ctx;
}
