#!/usr/bin/env node
// `npm run demo`: the main job on the built-in simulated cluster. Four nodes (real sshd each,
// simulated A100 and H100 GPUs): doctor, nvidia-smi on every node, an offline plan, then a run
// that applies a MIG layout, stresses every instance, and restores the original layout.
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

let ok = step(
  "start 4 simulated GPU nodes (one sshd each on 127.0.0.x): 2x A100 on R535, 2x H100 on R580",
  ["sim", "up", "--spec", "inventory/demo-cluster.yaml", "--inventory", inv],
);
try {
  ok &&= step("check the nodes", ["doctor", "-i", inv]);
  ok &&= step("list the GPUs of every node at once", ["exec", "-i", inv, "--", "nvidia-smi", "-L"]);
  ok &&= step("plan NVIDIA's all-balanced layout for an H100, offline", [
    "plan",
    "fixtures/layouts/default.yaml",
    "-c",
    "all-balanced",
    "--gpu",
    "H100-80GB",
  ]);
  ok &&= step("apply it, stress every MIG instance for 5 s, and restore the original layout", [
    "run",
    "-i",
    inv,
    "--layout",
    "fixtures/layouts/default.yaml",
    "-c",
    "all-balanced",
    "--suites",
    "stress",
    "--duration",
    "5",
    "--out",
    "reports/demo",
  ]);
  ok &&= step("the nodes are back as they were (MIG off, no GPU instance)", [
    "exec",
    "-i",
    inv,
    "--",
    "nvidia-smi",
    "--query-gpu=name,mig.mode.current",
    "--format=csv,noheader",
  ]);
} finally {
  step("stop the simulated cluster", ["sim", "down", "--inventory", inv]);
}
console.log(ok ? "\ndemo finished: logs and measurements in reports/demo/" : "\ndemo failed");
process.exit(ok ? 0 : 1);
