#!/usr/bin/env node
// A simulated node's `scontrol`, `srun`, `sbatch`, `sinfo`, `squeue`, `scancel` once the
// cluster runs a real Slurm: first bring slurm.conf/gres.conf to the node's MIG state (a
// layout may have changed since), then run Debian's own command against the cluster's config.
// Jobs inherit the session's environment (srun's --export=ALL), so they find the simulated
// nvidia-smi and workloads of the node they were started from.
import { spawnSync } from "node:child_process";
import { confPath, slurmDirOf, syncSlurm } from "./cluster.js";

const [clusterDir, tool, ...args] = process.argv.slice(2);
if (!clusterDir || !tool) {
  process.stderr.write("usage: wrapper.js CLUSTER_DIR TOOL [ARGS…]\n");
  process.exit(2);
}
try {
  await syncSlurm(clusterDir);
} catch (e) {
  // The command still runs: it shows Slurm as it is, which is what a checker must see.
  process.stderr.write(`slicecheck sim: gres sync failed: ${(e as Error).message}\n`);
}
const r = spawnSync(`/usr/bin/${tool}`, args, {
  stdio: "inherit",
  env: { ...process.env, SLURM_CONF: confPath(slurmDirOf(clusterDir)) },
});
process.exitCode = r.status ?? 1;
