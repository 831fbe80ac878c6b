// `run --via slurm` under device confinement. With task/cgroup and cgroup.conf
// `ConstrainDevices=yes`, Slurm denies a job every gres device File of the node it was not
// allocated (cgroup.conf(5): "If configured to "yes" then constrain the job's allowed devices
// based on GRES allocated resources"), so a task holding no gres sees no GPU at all: its checks
// would report the node's GPUs as missing or broken, a false verdict for the whole node. So,
// where devices are confined, each task asks for every GPU gres of its node (set on the pinned,
// still held task: `scontrol update JobId=<id>_<i> TresPerNode=gres:…`, which Slurm 22.05
// takes), and what cannot be confined to a job is refused before anything is submitted:
// a layout change (its new instances' access caps are in no job's cgroup) and the suite whose
// probe jobs need the very gres the task holds.
import { SlicecheckError } from "../errors.js";
import { suiteOf } from "../util/suite-registry.js";
import { type GresEntry, parseCgroupConf } from "../verdicts/slurm.js";

export interface DeviceConstraint {
  /** Whether the nodes' jobs are denied the gres devices they were not allocated. */
  on: boolean;
  /** Where that was read, for the messages. */
  source: string;
}

/** ConstrainDevices from `scontrol show config`'s "Cgroup Support Configuration:" block, which
 * slurmctld (>= 20.11) fills only where a plugin uses cgroups (JobAcctGatherType, ProctrackType
 * or TaskPlugin naming cgroup; proc_req.c). null: no such block, or no ConstrainDevices in it. */
export function constrainFromConfig(showConfig: string): boolean | null {
  const lines = showConfig.split("\n");
  const at = lines.findIndex((l) => /^\s*Cgroup Support Configuration:\s*$/.test(l));
  if (at < 0) return null;
  // Its `Key = value` lines run to the blank line before the next block.
  for (const l of lines.slice(at + 1)) {
    if (!l.trim()) break;
    const v = /^\s*ConstrainDevices\s*=\s*(\S+)/i.exec(l)?.[1];
    if (v !== undefined) return v.toLowerCase() === "yes";
  }
  return null;
}

/**
 * Whether jobs on the cluster have their devices confined: the controller's own word where it
 * gives one, else the cgroup.conf beside slurm.conf (where a node's slurmd reads it; the slurm
 * suite reads it the same way). Conservative: a ConstrainDevices=yes is taken as confining
 * whatever TaskPlugin says, since a task that then holds its node's gres loses nothing; a file
 * that cannot be read is Slurm's default (no), and the task's own check in the job (the array
 * script) still stops a task that sees fewer devices than it asked for.
 */
export function deviceConstraint(showConfig: string, cgroupConf: string | null): DeviceConstraint {
  const ctl = constrainFromConfig(showConfig);
  if (ctl !== null)
    return {
      on: ctl,
      source: `\`scontrol show config\` (Cgroup Support Configuration: ConstrainDevices=${ctl ? "yes" : "no"})`,
    };
  if (cgroupConf === null)
    return { on: false, source: "no readable cgroup.conf (Slurm's default: no)" };
  const v = parseCgroupConf(cgroupConf).constrainDevices;
  return {
    on: v === "yes",
    source: `cgroup.conf (ConstrainDevices=${v ?? "unset, Slurm's default no"})`,
  };
}

/** The GPU gres a node's task must hold to reach every GPU device of the node under
 * confinement (`gres:gpu:h100-80gb:2,gres:mig:1g.10gb:1`), and how many devices that is (what
 * nvidia-smi in the job must then list). Other gres (shards, MPS) name no device of their own. */
export function gpuGres(gres: readonly GresEntry[]): { tres: string; devices: number } | null {
  const mine = gres.filter((g) => (g.name === "gpu" || g.name === "mig") && g.count > 0);
  if (!mine.length) return null;
  return {
    tres: mine.map((g) => `gres:${g.name}${g.type ? `:${g.type}` : ""}:${g.count}`).join(","),
    devices: mine.reduce((n, g) => n + g.count, 0),
  };
}

/** Refuses (exit 3, before anything is submitted) what a confined task cannot do. */
export function refuseConfined(
  c: DeviceConstraint,
  o: { layout: string | null; suites: readonly string[] },
): void {
  if (!c.on) return;
  const why = `the cluster confines each job to the GPU devices it was allocated (ConstrainDevices=yes, from ${c.source})`;
  const instead =
    "run it directly over SSH instead (without --via slurm; --drain takes the nodes out of Slurm meanwhile)";
  if (o.layout)
    throw new SlicecheckError(
      "USAGE",
      `--via slurm cannot apply --layout here: ${why}, and the instances a layout change creates inside a job are in none of its allocated gres, so the job could not reach them; ${instead}`,
    );
  const probes = suiteOf("confinement");
  if (o.suites.includes(probes))
    throw new SlicecheckError(
      "USAGE",
      `--via slurm cannot run the ${probes} suite here: ${why}, so each task holds all of its node's GPU gres and the suite's probe jobs could never start beside it; ${instead}`,
    );
}
