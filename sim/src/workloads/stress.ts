#!/usr/bin/env node
// The simulated `slicecheck-stress` as a Node process of its own (programs/stress.ts is the
// program; the resident simulator runs the same one for its bash client).
import { runInProcess } from "./ctx.js";
import { stress } from "./programs/stress.js";

await runInProcess(stress);
