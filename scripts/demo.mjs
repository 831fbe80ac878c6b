#!/usr/bin/env node
// `npm run demo`: brings up a simulated cluster of 4 nodes (real sshd each, simulated GPUs),
// checks it with `slicecheck doctor`, runs `nvidia-smi -L` on every node, and stops it.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const inv = "inventory/sim.yaml";
const step = (title, args, okCodes = [0]) => {
  console.log(`\n== ${title}\n$ slicecheck ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [join(root, "bin", "slicecheck.js"), ...args], {
    stdio: "inherit",
    cwd: root,
  });
  if (!okCodes.includes(r.status ?? -1)) {
    console.error(`demo: \`slicecheck ${args.join(" ")}\` exited ${r.status}`);
    return false;
  }
  return true;
};

let ok = step("start 4 simulated GPU nodes (one sshd each on 127.0.0.x)", [
  "sim",
  "up",
  "--nodes",
  "4",
  "--gpu",
  "H100-80GB",
  "--inventory",
  inv,
]);
try {
  ok &&= step("check the nodes", ["doctor", "-i", inv]);
  ok &&= step("list the GPUs of every node at once", ["exec", "-i", inv, "--", "nvidia-smi", "-L"]);
} finally {
  step("stop the simulated cluster", ["sim", "down", "--inventory", inv]);
}
console.log(ok ? "\ndemo finished" : "\ndemo failed");
process.exit(ok ? 0 : 1);
