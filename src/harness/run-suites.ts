// The run's suites task: the suite files loaded over the run's nodes and run by mocha (live
// Allure results, one check per test), with what the run knows as Allure's environment and
// each suite's declared labels.
import { join } from "node:path";
import { CATEGORIES, environmentOf } from "../report/suites.js";
import { APPLY_CHECK_LABELS, APPLY_CHECK_SUITE, HARNESS_SUITE } from "../util/suite-registry.js";
import type { HarnessContext } from "./context.js";
import { type MochaRunOptions, runSuites } from "./mocha-run.js";
import { suiteContext } from "./run-context.js";
import { codeOf, errText } from "./run-reports.js";
import type { RunState } from "./run-state.js";
import { labelsOf } from "./suite-declare.js";
import type { RunTask } from "./tasks.js";

function environment(st: RunState, ctx: HarnessContext): Record<string, string> {
  return environmentOf({
    runId: st.o.runId,
    label: st.o.label,
    suites: st.suites.map((f) => f.name),
    layout: st.view.layout,
    nodes: [...ctx.views.values()].map((n) => ({
      node: n.name,
      driver: n.driver,
      cuda: n.cuda,
      gpus: n.gpus.map((g) => g.name),
    })),
  });
}

function mochaOptions(st: RunState, ctx: HarnessContext): MochaRunOptions {
  const { o, view } = st;
  return {
    files: st.suites,
    grep: o.grep,
    bail: o.bail,
    allureResults: o.allure ? join(o.outDir, "allure-results") : null,
    environmentInfo: environment(st, ctx),
    categories: CATEGORIES,
    parameters: (node) => {
      const n = node ? ctx.views.get(node) : undefined;
      return {
        driver: n?.driver ?? "unknown",
        CUDA: n?.cuda ?? "unknown",
        layout: view.layout ? `${view.layout.file} -c ${view.layout.config}` : "as found",
      };
    },
    preChecks: st.pre.splice(0),
    planned: (steps) => {
      for (const [node, list] of steps) st.progress.plan(node, list);
      st.selected = [...steps.values()].flat().reduce((n, s) => n + s.units, 0);
    },
    labels: (suite) => {
      const f = st.suites.find((x) => x.name === suite);
      // The apply's own check sits beside the layout suite's, whether or not that one runs.
      if (!f && suite === APPLY_CHECK_SUITE)
        return labelsOf({ needs: { labels: APPLY_CHECK_LABELS } }, suite);
      return labelsOf(f, suite);
    },
    runId: o.runId,
    spans: st.tasks.spans,
  };
}

/** The suite API installed on globalThis for as long as `fn` loads or runs suite files. */
export async function withSuiteContext<T>(
  st: RunState,
  fn: (ctx: HarnessContext) => Promise<T>,
): Promise<T> {
  const ctx = suiteContext(st);
  ctx.install();
  try {
    return await fn(ctx);
  } finally {
    ctx.uninstall();
  }
}

export const suitesTask: RunTask<RunState> = {
  name: "suites",
  run: async (st) => {
    const ran = await withSuiteContext(st, (ctx) => runSuites(ctx, mochaOptions(st, ctx)));
    const lost = ran.writeErrors;
    if (lost.length > 0)
      st.sink.harness({
        suite: HARNESS_SUITE,
        title: "the Allure results are written",
        status: "broken",
        code: codeOf(lost[0], "WRITE"),
        message: `${lost.length} Allure write(s) failed or were skipped in ${join(st.o.outDir, "allure-results")} (${errText(lost[0])}); free space there or give --out another folder`,
      });
  },
};
