#!/usr/bin/env node
// Entry of the simulated nvidia-smi on a simulated node's PATH (through a wrapper script named
// `nvidia-smi`). Compiled to dist/sim/nvsmi/main.js; it imports only the simulator and the
// catalogue, so it starts in tens of milliseconds.

import { nvidiaSmiMain } from "./cli.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("nvidia-smi (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(255);
}

const code = await nvidiaSmiMain(process.argv.slice(2), {
  stateDir,
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  uid: typeof process.getuid === "function" ? process.getuid() : 0,
});
// Let stdout drain before exiting: process.exit would cut a piped write short.
process.exitCode = code;
