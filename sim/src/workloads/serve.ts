#!/usr/bin/env node
// The simulated `slicecheck-serve` as a Node process of its own (programs/serve.ts is the
// program; the resident simulator runs the same one for its bash client).
import { runInProcess } from "./ctx.js";
import { serve } from "./programs/serve.js";

await runInProcess(serve);
