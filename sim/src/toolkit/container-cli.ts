#!/usr/bin/env node
// The simulated node's `nvidia-container-cli info` (answers.ts). Under `sim fault no-toolkit`:
// not installed (exit 127).
import { readState } from "../nvsmi/state.js";
import { containerCliInfo } from "./answers.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("nvidia-container-cli (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(2);
}
const state = readState(stateDir);
if (state.noToolkit) {
  process.stderr.write("sh: 1: nvidia-container-cli: not found\n");
  process.exit(127);
}
if (process.argv[2] !== "info") {
  process.stderr.write("nvidia-container-cli (simulated): only `info` is modelled\n");
  process.exit(1);
}
process.stdout.write(containerCliInfo(state));
