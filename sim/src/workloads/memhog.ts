#!/usr/bin/env node
// The simulated `slicecheck-memhog` as a Node process of its own (programs/memhog.ts is the
// program; the resident simulator runs the same one for its bash client).
import { runInProcess } from "./ctx.js";
import { memhog } from "./programs/memhog.js";

await runInProcess(memhog);
