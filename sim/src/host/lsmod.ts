#!/usr/bin/env node
// The simulated node's `lsmod`: the NVIDIA driver's modules, with nvidia_drm only while a GPU
// "holds" it (state `holders`), in lsmod's column layout.

import { nodeClients } from "./clients.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
const drm = stateDir ? nodeClients(stateDir).includes("nvidia_drm") : false;
const rows: [string, number, string][] = [
  ...(drm ? ([["nvidia_drm", 94208, "0"]] as [string, number, string][]) : []),
  ["nvidia_modeset", 1556480, drm ? "1 nvidia_drm" : "0"],
  ["nvidia_uvm", 6619136, "0"],
  ["nvidia", 56213504, "2 nvidia_uvm,nvidia_modeset"],
];
const lines = ["Module                  Size  Used by"];
for (const [m, size, used] of rows)
  lines.push(`${m.padEnd(19)}${String(size).padStart(9)}  ${used}`);
process.stdout.write(`${lines.join("\n")}\n`);
