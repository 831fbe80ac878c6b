#!/usr/bin/env node
// Run by the simulated cluster's TaskProlog for every task: stands for the device cgroup that
// Slurm's task/cgroup gives a job under cgroup.conf `ConstrainDevices=yes`, which this machine
// cannot give (no device cgroups in a container). Prints the TaskProlog lines
// (`export NAME=value`, `unset NAME`) that fence the task (fence.ts) and a per-task view of
// /dev/nvidia-caps (SLICECHECK_DEV) where the caps of instances it does not hold cannot be opened.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { readState } from "../nvsmi/state.js";
import {
  allocationOf,
  constrainDevices,
  fenceLines,
  heldDevices,
  writeCapsView,
} from "./cgroup.js";
import { confPath, readSlurmCluster } from "./cluster.js";
import { devicesOf } from "./conf.js";

const [dir] = process.argv.slice(2);
const node = process.env.SLURMD_NODENAME ?? "";
const job = process.env.SLURM_JOB_ID ?? "";
const c = dir ? readSlurmCluster(dir) : null;
const applied = c?.applied.find((a) => a.name === node);
const rec = c?.nodes.find((n) => n.name === node);
if (!dir || !c || !applied || !rec || !job) process.exit(0);

let cgroup = "";
try {
  cgroup = readFileSync(`${dir}/cgroup.conf`, "utf8");
} catch {
  // No cgroup.conf: Slurm's default, ConstrainDevices=no.
}
const show = spawnSync("/usr/bin/scontrol", ["show", "job", "-d", job], {
  env: { ...process.env, SLURM_CONF: confPath(dir) },
  encoding: "utf8",
  timeout: 15_000,
});
const constrained = constrainDevices(cgroup);
// A job holding no gres gets none of them under ConstrainDevices=yes (cgroup.ts).
// A record that could not be read (slurmctld busy) leaves the job unfenced, as before: a
// simulated denial of devices a job does hold would be a planted fault nobody asked for.
const read = show.status === 0 ? allocationOf(show.stdout ?? "", node, applied) : null;
const allocated = show.status === 0 ? heldDevices(read, constrained) : null;
const step = process.env.SLURM_STEP_ID ?? process.env.SLURM_STEPID ?? "batch";
const live = devicesOf(readState(rec.stateDir));
const view =
  allocated === null
    ? null
    : writeCapsView(
        `${dir}/jobs/${job}.${step}.${process.pid}`,
        live,
        constrained ? allocated : null,
      );
for (const l of fenceLines({
  constrained,
  allocated,
  view,
  cvd: process.env.CUDA_VISIBLE_DEVICES,
}))
  process.stdout.write(`${l}\n`);
