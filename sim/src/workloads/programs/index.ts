// The workload programs the resident simulator runs for a bash client (resident/workloads.ts),
// by the name of the node tool. They are the ones a run starts most: of 296 Node starts in three
// heavy end-to-end files, 217 were these four. The others (gpu_burn, all_reduce_perf, the
// allreduce and train-step ranks, mps-control) stay Node processes of their own.
import type { Program } from "../ctx.js";
import { crasher } from "./crasher.js";
import { memhog } from "./memhog.js";
import { serve } from "./serve.js";
import { stress } from "./stress.js";

export const RESIDENT_PROGRAMS: Readonly<Record<string, Program>> = {
  "slicecheck-stress": stress,
  "slicecheck-memhog": memhog,
  "slicecheck-crasher": crasher,
  "slicecheck-serve": serve,
};
