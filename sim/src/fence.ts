// Device fencing of a simulated node: what a Slurm job's device cgroup (cgroup.conf
// `ConstrainDevices=yes`, task/cgroup) lets it reach. This machine has no device cgroup to give a
// job, so the simulated node's TaskProlog (slurmd/fence-main.ts) puts the job's allocation into
// SLICECHECK_SIM_FENCE (the devices' UUIDs, comma-separated; `none` for a job holding none), and
// the simulated tools that stand for the driver read it: the CUDA of the workloads
// (workloads/device.ts) and `nvidia-smi -L` (nvsmi/fmt/list.ts). Unset: nothing is fenced, as on
// a node without ConstrainDevices, or for root outside any job.
//
// What a real cgroup gives that this does not: a process cannot leave its cgroup, while a job
// could unset the variable. The probe never does; the simulation does not pretend otherwise.

export const FENCE_VAR = "SLICECHECK_SIM_FENCE";

/** The UUIDs (lower case) a fenced process may reach; null where nothing is fenced. */
export function fenceOf(env: NodeJS.ProcessEnv = process.env): Set<string> | null {
  const v = env[FENCE_VAR];
  if (v === undefined) return null;
  return new Set(
    v
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s && s !== "none"),
  );
}

/** A device (MIG UUID or GPU UUID) the fence lets through; everything when there is none. */
export const reachable = (fence: Set<string> | null, uuid: string): boolean =>
  fence === null || fence.has(uuid.toLowerCase());
