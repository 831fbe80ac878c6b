#!/usr/bin/env node
// Entry of the simulated `scontrol` on a simulated node's PATH (through a wrapper script).

import { scontrolMain } from "./scontrol.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("scontrol (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(1);
}
try {
  process.exitCode = scontrolMain(process.argv.slice(2), {
    stateDir,
    stdout: (s) => process.stdout.write(s),
    stderr: (s) => process.stderr.write(s),
  });
} catch (e) {
  process.stderr.write(`scontrol (simulated): ${(e as Error).message}\n`);
  process.exitCode = 1;
}
