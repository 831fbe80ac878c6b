#!/usr/bin/env node
// The simulated `nvidia-cuda-mps-control`, only as far as the harness needs it to turn MPS on
// and off (reference workloads.md 5.1): `-d` starts the control daemon and returns, `-f` runs
// it in the foreground until a signal, and commands on stdin (`echo quit | ...`) talk to it:
// `quit` stops it, `get_server_list` lists no server (the simulator runs no server process).
// Other commands are accepted and do nothing. The daemon serves the GPUs that
// CUDA_VISIBLE_DEVICES shows when it starts (every GPU when unset; a MIG device's parent GPU).
// Without a daemon, commands fail as the real client does when it finds no control pipe.

import { readFileSync } from "node:fs";
import { readState, updateState } from "../nvsmi/state.js";
import { visibleDevices } from "./device.js";
import { setDaemon } from "./mps.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("nvidia-cuda-mps-control (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(255);
}

function servedGpus(): Set<number> {
  const state = readState(stateDir!);
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (visible === undefined) return new Set(state.gpus.map((g) => g.index));
  return new Set(visibleDevices(state, visible).map((d) => d.gpu.index));
}

async function toggle(active: boolean, gpus: Set<number> | null): Promise<void> {
  await updateState(stateDir!, (state) => {
    let changed = false;
    for (const g of state.gpus) {
      if (gpus === null || gpus.has(g.index)) changed = setDaemon(g, active) || changed;
    }
    return { changed, result: undefined };
  });
}

const argv = process.argv.slice(2);
if (argv[0] === "-d") {
  await toggle(true, servedGpus());
} else if (argv[0] === "-f") {
  await toggle(true, servedGpus());
  const stop = () => {
    void toggle(false, null).finally(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  setInterval(() => {}, 60_000);
} else if (argv.length > 0) {
  process.stderr.write(`nvidia-cuda-mps-control: unknown option ${argv[0]}\n`);
  process.exitCode = 1;
} else {
  const running = readState(stateDir).gpus.some((g) => g.mps?.active === true);
  if (!running) {
    process.stderr.write("Cannot find MPS control daemon process\n");
    process.exitCode = 1;
  } else {
    let input = "";
    try {
      input = readFileSync(0, "utf8");
    } catch {
      // No stdin: no command.
    }
    for (const command of input.split("\n").map((l) => l.trim())) {
      if (command === "quit") await toggle(false, null);
    }
  }
}
