#!/usr/bin/env node
// The simulated node's `nvcc`: the node's own toolkit, so that what `doctor` reads is the node's
// and never the control machine's (a real nvcc on the host would otherwise leak in through
// PATH). Its release is the driver's CUDA version unless `sim fault nvcc --name X.Y` planted
// another (state `nvcc`). It answers `--version` only: the simulated workloads are pre-installed
// on the node's PATH, so the build never compiles with it.
//
// RECONSTRUCTED: the layout of `nvcc --version` follows NVIDIA's toolkits (five lines; the one
// every tool reads is `Cuda compilation tools, release X.Y, VX.Y.Z`); the build date and the
// numbers are placeholders, as the reference holds no capture of it.
import { readState } from "../nvsmi/state.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
const args = process.argv.slice(2);
if (args.includes("--version") || args.includes("-V")) {
  const state = stateDir ? readState(stateDir) : null;
  const release = state?.nvcc ?? (state && /^\d+\.\d+$/.test(state.cuda) ? state.cuda : "12.0");
  process.stdout.write(
    `${[
      "nvcc: NVIDIA (R) Cuda compiler driver",
      "Copyright (c) 2005-2025 NVIDIA Corporation",
      "Built on Mon_Jan_06_00:00:00_PM_PST_2025",
      `Cuda compilation tools, release ${release}, V${release}.0`,
      `Build cuda_${release}.r${release}/compiler.00000000_0`,
    ].join("\n")}\n`,
  );
  process.exit(0);
}
process.stderr.write(
  "nvcc (simulated): compiles nothing; the simulated workloads are pre-installed on the node\n",
);
process.exit(1);
