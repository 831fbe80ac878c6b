// The programs the resident simulator runs for a bash client (workloads.ts), by the name of the
// node tool: the workloads a run starts most (of 296 Node starts in three heavy end-to-end
// files, 217 were these four), and nvidia-smi's calls that its one-shot answer leaves (a MIG
// change, anything that writes to stderr: some 65 Node starts in those files). The others
// (gpu_burn, all_reduce_perf, the allreduce and train-step ranks, mps-control, the container
// tools) stay Node processes of their own.
import { nvidiaSmiMain } from "../nvsmi/cli.js";
import type { Program, ProgramCtx } from "../workloads/ctx.js";
import { crasher } from "../workloads/programs/crasher.js";
import { memhog } from "../workloads/programs/memhog.js";
import { serve } from "../workloads/programs/serve.js";
import { stress } from "../workloads/programs/stress.js";
import { OWN_UID } from "./protocol.js";

/** nvidia-smi as its own process runs it (nvsmi/main.ts), with the client's environment. A
 * signal ends the client at once; a change already under way still completes here, as one the
 * driver had begun would. */
async function nvidiaSmi(ctx: ProgramCtx): Promise<void> {
  const stateDir = ctx.env.SLICECHECK_SIM_STATE;
  if (!stateDir) {
    ctx.stderr("nvidia-smi (simulated): SLICECHECK_SIM_STATE is not set\n");
    return ctx.exit(255);
  }
  const code = await nvidiaSmiMain([...ctx.argv], {
    stateDir,
    stdout: ctx.stdout,
    stderr: ctx.stderr,
    // The resident runs programs only for clients of its own uid (workloads.ts).
    uid: OWN_UID,
    env: ctx.env,
  });
  ctx.exit(code);
}

export const RESIDENT_PROGRAMS: Readonly<Record<string, Program>> = {
  "slicecheck-stress": stress,
  "slicecheck-memhog": memhog,
  "slicecheck-crasher": crasher,
  "slicecheck-serve": serve,
  "nvidia-smi": nvidiaSmi,
};
