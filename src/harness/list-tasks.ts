// `slicecheck run --list`: its own short task list over the run's state: connect (no lock),
// discover, plan the layout offline (with --layout), then load the suites and list their tests.
// Nothing on a node is changed and nothing is written; a node that cannot be read says why.
import { SlicecheckError } from "../errors.js";
import { planListedLayout } from "./list-layout.js";
import { listSuites } from "./mocha-run.js";
import { errText } from "./run-reports.js";
import { live, nodeOf, type RunState } from "./run-state.js";
import { withSuiteContext } from "./run-suites.js";
import { connectTask, discoverTask } from "./run-tasks.js";
import type { RunTask } from "./tasks.js";

const planLayoutTask: RunTask<RunState> = {
  name: "plan the layout",
  when: (st) => !!st.o.layout,
  run: async (st) => {
    const config = st.o.layout?.config;
    if (!config) return;
    await Promise.all(
      live(st).map(async (s) => {
        try {
          await planListedLayout(s, config);
        } catch (e) {
          // The run would refuse the apply here: no instance of the node is listed, and why.
          s.assume({ driver: s.discovered?.driver ?? null, cuda: null, instances: [] });
          s.error = new SlicecheckError(
            "LAYOUT",
            `config ${config.name} cannot be planned on it: ${errText(e)}`,
          );
        }
      }),
    );
  },
};

const listTask: RunTask<RunState> = {
  name: "list",
  run: async (st) => {
    for (const s of st.sessions)
      if (s.error) st.o.err(`${nodeOf(s)}: not listed: ${errText(s.error)}`);
    st.listed = await withSuiteContext(st, (ctx) =>
      listSuites(ctx, st.suites, st.o.runId, st.o.grep),
    );
  },
};

export const LIST_TASKS: readonly RunTask<RunState>[] = [
  connectTask(false),
  discoverTask,
  planLayoutTask,
  listTask,
];
