// What Slurm's device cgroup gives a job on a simulated node (fence-main.ts runs it from the
// TaskProlog): the job's gres devices from its own record, cgroup.conf's ConstrainDevices, the
// TaskProlog lines that fence the task, and its view of /dev/nvidia-caps.
//
// Slurm's behaviour modelled (slurm.conf/cgroup.conf/gres.conf documentation; no capture in
// the references): with task/cgroup and ConstrainDevices=yes the job's cgroup denies every gres
// device File of the node it was not allocated (for a MIG instance its GI and CI access caps
// under /dev/nvidia-caps), and CUDA_VISIBLE_DEVICES is renumbered from 0 within the job. With
// ConstrainDevices=no (Slurm's default) nothing is denied and CUDA_VISIBLE_DEVICES carries the
// device's index among the node's gpu gres. Generic gres (`mig:<profile>`) get no variable.
//
// A job holding no gres on the node is denied every GPU gres device under ConstrainDevices=yes,
// as on a real node: cgroup.conf(5), ConstrainDevices: "If configured to "yes" then constrain
// the job's allowed devices based on GRES allocated resources. It uses the devices subsystem
// for that." A job allocated no GRES is allowed none of the gres Files (nvidia-smi in it finds
// no GPU). With ConstrainDevices=no it is left unfenced.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { migMinor } from "../nvsmi/caps.js";
import type { GresDevice, SlurmNodeConf } from "./conf.js";
import { mknodDead, mknodNull } from "./procs.js";

/** cgroup.conf's ConstrainDevices (case-insensitive, `#` comments); absent means no. */
export function constrainDevices(text: string): boolean {
  let on = false;
  for (const raw of text.split("\n")) {
    const m = /^\s*constraindevices\s*=\s*(\S+)/i.exec(raw.replace(/#.*/, ""));
    if (m) on = (m[1] ?? "").toLowerCase() === "yes";
  }
  return on;
}

/** `0-1,3` → [0, 1, 3]. */
function indexes(s: string): number[] {
  const out: number[] = [];
  for (const r of s.split(",")) {
    const [lo, hi] = r.split("-").map(Number);
    if (lo === undefined || Number.isNaN(lo)) continue;
    for (let i = lo; i <= (hi ?? lo); i++) out.push(i);
  }
  return out;
}

/**
 * The devices the job holds on `node`, from `scontrol show job -d`'s per-node lines
 * (`Nodes=sim01 CPU_IDs=0 Mem=0 GRES=gpu:2g.20gb:1(IDX:1)`): IDX counts among the node's gres
 * of that name in gres.conf order. null: the job holds no gres there.
 */
export function allocationOf(
  showJob: string,
  node: string,
  conf: Pick<SlurmNodeConf, "devices" | "migName">,
): GresDevice[] | null {
  const out: GresDevice[] = [];
  let any = false;
  for (const line of showJob.split("\n")) {
    const nodes = /(?:^|\s)Nodes=(\S+)/.exec(line)?.[1];
    const gres = /(?:^|\s)GRES=(\S+)/.exec(line)?.[1];
    if (!nodes || !gres || !nodes.split(",").includes(node)) continue;
    for (const m of gres.matchAll(/(?:^|,)([a-z]+):[^(,]*\(IDX:([0-9,-]+)\)/g)) {
      any = true;
      const name = m[1];
      const mine = conf.devices.filter((d) => (d.mig ? (conf.migName ?? "gpu") : "gpu") === name);
      for (const i of indexes(m[2] ?? "")) {
        const d = mine[i];
        if (d) out.push(d);
      }
    }
  }
  return any ? out : null;
}

/**
 * The job's /dev/nvidia-caps, rebuilt under `root`: config (1) and monitor (2), which are no
 * gres File and so not Slurm's to deny, and the GI and CI access caps of every live instance.
 * A cap the fence denies is a device no driver answers: open() fails. A real device cgroup makes
 * it fail with EPERM ("Operation not permitted"); this machine cannot, so the simulated error is
 * ENXIO ("No such device or address"). The probe counts any failed open as refused and keeps
 * the words. `allowed` null: nothing denied. Returns the folder to put in SLICECHECK_DEV.
 */
export function writeCapsView(
  root: string,
  live: readonly GresDevice[],
  allowed: readonly GresDevice[] | null,
): string {
  const dir = join(root, "nvidia-caps");
  rmSync(root, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ok = (uuid: string) => allowed === null || allowed.some((a) => a.uuid === uuid);
  const caps = new Map<number, boolean>([
    [1, true],
    [2, true],
  ]);
  for (const d of live) {
    if (d.gi === null || d.ci === null) continue;
    const open = ok(d.uuid);
    // A GI's access cap is reachable when one of its CIs is.
    const gi = migMinor(d.gpu, d.gi, null);
    caps.set(gi, (caps.get(gi) ?? false) || open);
    caps.set(migMinor(d.gpu, d.gi, d.ci), open);
  }
  for (const [minor, open] of caps) {
    const f = join(dir, `nvidia-cap${minor}`);
    if (open) mknodNull(f);
    else mknodDead(f);
  }
  return root;
}

/** The devices a job may reach on its node: its gres, none where it holds none and devices are
 * constrained; null where nothing is fenced (no gres and ConstrainDevices=no). */
export function heldDevices(
  allocated: readonly GresDevice[] | null,
  constrained: boolean,
): readonly GresDevice[] | null {
  return allocated ?? (constrained ? [] : null);
}

/** The TaskProlog lines: the fence, the caps view, CUDA_VISIBLE_DEVICES renumbered. */
export function fenceLines(o: {
  constrained: boolean;
  allocated: readonly GresDevice[] | null;
  view: string | null;
  cvd: string | undefined;
}): string[] {
  // A variable inherited from an enclosing job (srun --export=ALL) must not leak into this one.
  if (o.allocated === null) return ["unset SLICECHECK_SIM_FENCE", "unset SLICECHECK_DEV"];
  const lines = o.view ? [`export SLICECHECK_DEV=${o.view}`] : ["unset SLICECHECK_DEV"];
  if (!o.constrained) return [...lines, "unset SLICECHECK_SIM_FENCE"];
  lines.push(`export SLICECHECK_SIM_FENCE=${o.allocated.map((d) => d.uuid).join(",") || "none"}`);
  if (o.cvd) {
    const local = o.cvd
      .split(",")
      .map((_, i) => i)
      .join(",");
    lines.push(`export CUDA_VISIBLE_DEVICES=${local}`, `export GPU_DEVICE_ORDINAL=${local}`);
  }
  return lines;
}
