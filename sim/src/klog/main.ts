#!/usr/bin/env node
// Entry of the simulated `dmesg` on a simulated node's PATH (dist/sim/klog/main.js).

import { dmesgMain } from "./dmesg.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("dmesg (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(255);
}

process.exitCode = await dmesgMain(process.argv.slice(2), {
  stateDir,
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  uid: typeof process.getuid === "function" ? process.getuid() : 0,
});
