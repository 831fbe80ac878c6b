#!/usr/bin/env node
// The simulated node's `nvidia-container-cli info`: the driver and the CUDA version it runs, then
// one block per GPU, labels padded to 15 columns as libnvidia-container's src/cli/info.c prints
// them. Under `sim fault no-toolkit`: not installed (exit 127).
import { COMPUTE_CAP } from "../nvsmi/fmt/query.js";
import { readState } from "../nvsmi/state.js";
import { viewOf } from "../nvsmi/view.js";

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
const row = (k: string, v: string | number) => `${`${k}:`.padEnd(15)} ${v}`;
const out = [row("NVRM version", state.driver), row("CUDA version", state.cuda)];
for (const g of state.gpus) {
  if (g.lost) continue;
  const v = viewOf(state, g);
  const cc = v.architecture ? COMPUTE_CAP[v.architecture] : "8.9";
  out.push(
    "",
    row("Device Index", g.index),
    row("Device Minor", g.index),
    row("Model", v.smiName),
    row("Brand", "Nvidia"),
    row("GPU UUID", g.uuid),
    row("Bus Location", g.pciBusId),
    row("Architecture", cc),
  );
}
process.stdout.write(`${out.join("\n")}\n`);
