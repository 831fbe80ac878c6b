#!/usr/bin/env node
// The simulated `slicecheck-crasher` as a Node process of its own (programs/crasher.ts is the
// program; the resident simulator runs the same one for its bash client).
import { runInProcess } from "./ctx.js";
import { crasher } from "./programs/crasher.js";

await runInProcess(crasher);
