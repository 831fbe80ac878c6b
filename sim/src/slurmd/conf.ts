// slurm.conf and gres.conf for a simulated cluster, generated from the simulated GPUs' state:
// every MIG instance is one typed GPU gres (`Name=gpu Type=1g.10gb File=…`), a GPU without MIG
// one whole-card gres typed by its product; nodes with MIG go to the `mig` partition, the rest
// to `gpu`. All nodes are slurmd processes on this machine (NodeHostname=localhost, one port
// each: Debian's slurmd takes -N NAME). Pure: state in, text out.

import { migMinor } from "../nvsmi/caps.js";
import type { SimState } from "../nvsmi/state.js";
import { giProfileOf, migDevices, viewOf } from "../nvsmi/view.js";

export interface GresDevice {
  node: string;
  gpu: number;
  /** `1g.10gb` for a MIG instance; the product (`h100-80gb`) for a whole card. */
  type: string;
  mig: boolean;
  /** MIG-… or GPU-…: what CUDA_VISIBLE_DEVICES takes. */
  uuid: string;
  /** The GI and CI ids of a MIG instance; null for a whole card. */
  gi: number | null;
  ci: number | null;
}

export interface SlurmNodeConf {
  name: string;
  port: number;
  devices: GresDevice[];
  /** The gres name of the node's MIG instances: typed `gpu` (Slurm's own MIG support), or the
   * source document's `mig:<profile>` naming (a generic gres, `GresTypes=gpu,mig`). */
  migName?: "gpu" | "mig";
}

export interface SlurmPaths {
  dir: string;
  /** Who slurmctld runs as: `slurm` (Debian's package user) where it can reach its folders. */
  slurmUser?: string;
  controllerPort: number;
  mungeSocket: string;
}

/** The File a device's gres points at, shaped as on a real node: a MIG instance's CI access
 * device `…/nvidia-caps/nvidia-cap<minor>` (its minor from the node's mig-minors, which the probe
 * reads back), a whole card `…/nvidia<index>`; placeholders under this folder, since the
 * simulation has no /dev/nvidia-caps. */
export function deviceFile(
  dir: string,
  d: { node: string; gpu: number; gi?: number | null; ci?: number | null; uuid: string },
): string {
  if (d.gi === undefined || d.ci === undefined)
    // A device saved by an older cluster file: named after its UUID, as that one did.
    return `${dir}/dev/${d.node}/${d.uuid.replace(/\//g, "+")}`;
  return d.gi === null || d.ci === null
    ? `${dir}/dev/${d.node}/nvidia${d.gpu}`
    : `${dir}/dev/${d.node}/nvidia-caps/nvidia-cap${migMinor(d.gpu, d.gi, d.ci)}`;
}

export function devicesOf(state: SimState): GresDevice[] {
  const out: GresDevice[] = [];
  for (const gpu of state.gpus) {
    const view = viewOf(state, gpu);
    if (!gpu.mig.current || !view.catalog) {
      out.push({
        node: state.node,
        gpu: gpu.index,
        type: gpu.product.toLowerCase(),
        mig: false,
        uuid: gpu.uuid,
        gi: null,
        ci: null,
      });
      continue;
    }
    for (const { gi, ci } of migDevices(view))
      out.push({
        node: state.node,
        gpu: gpu.index,
        type: giProfileOf(view, gi).name.replace(/\+/g, "_"),
        mig: true,
        uuid: ci.uuid,
        gi: gi.id,
        ci: ci.id,
      });
  }
  return out;
}

const gresName = (n: Pick<SlurmNodeConf, "migName">, d: GresDevice) =>
  d.mig ? (n.migName ?? "gpu") : "gpu";

/** `gpu:1g.10gb:2,gpu:3g.40gb:1` (or `mig:1g.10gb:2,…`), types in first-seen order. */
export function gresSummary(
  devices: readonly GresDevice[],
  n: Pick<SlurmNodeConf, "migName"> = {},
): string {
  const counts = new Map<string, number>();
  for (const d of devices) {
    const k = `${gresName(n, d)}:${d.type}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, c]) => `${k}:${c}`).join(",");
}

export function gresConf(p: SlurmPaths, nodes: readonly SlurmNodeConf[]): string {
  const lines = ["# Written by `slicecheck sim up --slurm` from the simulated GPUs' MIG state."];
  for (const n of nodes)
    for (const d of n.devices)
      lines.push(
        `NodeName=${n.name} Name=${gresName(n, d)} Type=${d.type} File=${deviceFile(p.dir, d)}`,
      );
  return `${lines.join("\n")}\n`;
}

/** `alsoWhole`: nodes put into the whole-card partition too, whatever their GPUs (a planted
 * misconfiguration). */
export function slurmConf(
  p: SlurmPaths,
  nodes: readonly SlurmNodeConf[],
  alsoWhole: readonly string[] = [],
): string {
  const d = p.dir;
  const mig = nodes.filter((n) => n.devices.some((x) => x.mig)).map((n) => n.name);
  const whole = nodes
    .filter((n) => !n.devices.some((x) => x.mig) || alsoWhole.includes(n.name))
    .map((n) => n.name);
  const lines = [
    "# Written by `slicecheck sim up --slurm`: a real Slurm for the simulated nodes, every",
    "# daemon on this machine, files under this folder. Regenerated when a layout changes.",
    "ClusterName=slicecheck-sim",
    "SlurmctldHost=localhost(127.0.0.1)",
    `SlurmctldPort=${p.controllerPort}`,
    // slurmctld drops to SlurmUser as on a real controller; slurmd stays root, as it must to
    // start jobs as their users.
    `SlurmUser=${p.slurmUser ?? "root"}`,
    "SlurmdUser=root",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    `AuthInfo=socket=${p.mungeSocket}`,
    `StateSaveLocation=${d}/state`,
    `SlurmdSpoolDir=${d}/spool/%n`,
    `SlurmctldPidFile=${d}/slurmctld.pid`,
    `SlurmdPidFile=${d}/slurmd-%n.pid`,
    `SlurmctldLogFile=${d}/slurmctld.log`,
    `SlurmdLogFile=${d}/slurmd-%n.log`,
    // No cgroups in a container: processes are tracked by /proc, devices are not fenced (the
    // README says what that leaves out).
    "ProctrackType=proctrack/linuxproc",
    // Each task gets its simulated node's environment (cluster.ts writes the script).
    `TaskProlog=${d}/task-prolog.sh`,
    // Does nothing unless a node planted slurm-epilog-hang (epilog.ts).
    `Epilog=${d}/epilog.sh`,
    "TaskPlugin=task/none",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    // The nodes' CPUs and memory are what this file says, not what this one machine has.
    "SlurmdParameters=config_overrides",
    "GresTypes=gpu,mig",
    "ReturnToService=2",
    "MpiDefault=none",
    "SchedulerType=sched/backfill",
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/none",
    "SlurmctldTimeout=30",
    "SlurmdTimeout=30",
    "InactiveLimit=0",
    "KillWait=5",
    "MinJobAge=60",
    ...nodes.map(
      (n) =>
        `NodeName=${n.name} NodeHostname=localhost NodeAddr=127.0.0.1 Port=${n.port} CPUs=8 RealMemory=64000${n.devices.length ? ` Gres=${gresSummary(n.devices, n)}` : ""}`,
    ),
    ...(mig.length ? [`PartitionName=mig Nodes=${mig.join(",")} MaxTime=INFINITE State=UP`] : []),
    ...(whole.length
      ? [`PartitionName=gpu Nodes=${whole.join(",")} MaxTime=INFINITE State=UP`]
      : []),
  ];
  return `${lines.join("\n")}\n`;
}

/**
 * The cluster's cgroup.conf: devices constrained, as a site offering MIG slices to tenants must
 * have it, unless a node planted `slurm-unconstrained`. The real slurmd here runs task/none (no
 * cgroups in a container) and does not act on it; the TaskProlog's fence does (cgroup.ts).
 */
export function cgroupConf(unconstrained: readonly string[]): string {
  return [
    "# Written by `slicecheck sim up --slurm`.",
    ...(unconstrained.length
      ? [`# slurm-unconstrained planted by ${unconstrained.join(", ")}`]
      : []),
    `ConstrainDevices=${unconstrained.length ? "no" : "yes"}`,
    "",
  ].join("\n");
}
