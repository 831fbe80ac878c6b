#!/usr/bin/env node
// Entry of the simulated `sacct` on a simulated node's PATH (through a wrapper script).

import { sacctMain } from "./sacct.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("sacct (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(1);
}
try {
  process.exitCode = sacctMain(process.argv.slice(2), {
    stateDir,
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
  });
} catch (e) {
  process.stderr.write(`sacct (simulated): ${(e as Error).message}\n`);
  process.exitCode = 1;
}
