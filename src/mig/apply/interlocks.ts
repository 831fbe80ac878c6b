// The safety interlocks, checked on the snapshot before the first change and only for GPUs that
// would change: someone else's compute processes, a Slurm node that is not drained, driver
// clients that block a MIG mode change, and a GPU reset the GPU cannot do. Each refusal says
// what was found and what to do about it.

import type { GpuChangePlan, GpuSnapshot, NodeSnapshot, SlurmView } from "./types.js";

export interface GpuToChange {
  gpu: GpuSnapshot;
  plan: GpuChangePlan;
  modeNeedsReset: boolean;
}

const HOLDER_ADVICE: Readonly<Record<string, string>> = {
  "nvidia-persistenced":
    "nvidia-persistenced is running: stop it (systemctl stop nvidia-persistenced) for the change and start it again afterwards",
  "nv-hostengine":
    "DCGM's nv-hostengine is running: stop it (systemctl stop nvidia-dcgm, or dcgm) for the change",
  nvidia_drm:
    "the nvidia_drm kernel module is loaded: unload it (stop the display manager, then modprobe -r nvidia_drm)",
};

/** Whether Slurm's state lets us touch the node: DRAIN with no job left (IDLE+DRAIN), or DOWN. */
export function slurmRefusal(s: SlurmView): string | null {
  if (s.state === null) {
    return `cannot tell whether Slurm node ${s.node} is drained: ${s.problem ?? "no State= in scontrol's answer"}; the inventory names slurm_node ${s.node}, so the node is not touched`;
  }
  // A --via slurm task's own job holding the node, alone, in a reservation: as good as drained.
  if (s.ownJob?.held) return null;
  const [base = "", ...flags] = s.state.toUpperCase().split("+");
  const b = base.replace(/[*~#$@^!%]+$/, "");
  const drain = flags.includes("DRAIN") || b === "DRAINED";
  if (b === "DOWN" || (drain && (b === "IDLE" || b === "DRAINED"))) return null;
  if (drain) {
    return `Slurm node ${s.node} is ${s.state}: it is draining but jobs still run on it; wait until scontrol shows IDLE+DRAIN, then rerun`;
  }
  if (s.ownJob)
    return `Slurm node ${s.node} is ${s.state}, running this run's job ${s.ownJob.jobId}, but ${s.ownJob.why}: with --via slurm, give --reservation R, a reservation on the nodes that only this run's jobs use (Flags=MAINT), so that no tenant's job runs beside the faults`;
  return `Slurm node ${s.node} is ${s.state}, not drained: drain it first (scontrol update nodename=${s.node} state=drain reason=slicecheck), wait until it shows IDLE+DRAIN, then rerun`;
}

/** What an interlock refused: which check, on which GPU (null: the whole node), and why. */
export interface Refusal {
  check: "slurm" | "foreign-process" | "holder" | "passthrough" | "pending-reset" | "vgpu-host";
  gpu: number | null;
  message: string;
}

/** A GPU the caller means to change, in the terms the interlocks judge it by. */
export interface GpuIntent {
  gpu: GpuSnapshot;
  /** The MIG mode changes (or a pending change must be made effective). */
  modeChange: boolean;
  resetPending: boolean;
  modeNeedsReset: boolean;
}

export interface NodeIntent {
  /** GPUs whose MIG state would change (apply, a run's --layout). */
  changing: readonly GpuIntent[];
  /** A suite injects faults on every GPU of the node (isolation, `injectsFaults`). */
  faults: boolean;
  allowReset: boolean;
}

function processRefusal(g: GpuSnapshot, faults: boolean): Refusal | null {
  if (g.processes.length === 0) return null;
  const shown = g.processes
    .slice(0, 3)
    .map((p) => `pid ${p.pid} ${p.name}${p.usedMiB === null ? "" : `, ${p.usedMiB} MiB`}`)
    .join("; ");
  const more = g.processes.length > 3 ? ` and ${g.processes.length - 3} more` : "";
  const verb = faults ? "faults" : "changes";
  return {
    check: "foreign-process",
    gpu: g.index,
    message: `GPU ${g.index}: ${g.processes.length} compute process(es) of someone else run on it (${shown}${more}); slicecheck ${verb} no GPU in use: stop them or wait for the job to end, then rerun`,
  };
}

/**
 * The one judgement of every interlock, on one snapshot (readNode's reads): apply and a run's
 * layout pass the GPUs they would change, the fault-injecting suites pass `faults`, and doctor
 * passes both, so "ready" there means exactly "apply and isolation would go ahead". Empty when
 * nothing refuses.
 */
export function nodeRefusals(s: NodeSnapshot, intent: NodeIntent): Refusal[] {
  const { changing, faults } = intent;
  if (changing.length === 0 && !faults) return [];
  const out: Refusal[] = [];
  if (s.slurm) {
    const r = slurmRefusal(s.slurm);
    if (r) out.push({ check: "slurm", gpu: null, message: r });
  }
  const changed = new Map(changing.map((c) => [c.gpu.index, c]));
  for (const gpu of s.gpus) {
    if (faults || changed.has(gpu.index)) {
      const p = processRefusal(gpu, faults && !changed.has(gpu.index));
      if (p) out.push(p);
    }
    // A vGPU host's GPU serves other VMs' tenants: a fault injected there reaches them, and
    // their processes are invisible to the host's process list (the check above misses them).
    if (faults && gpu.vgpuHost)
      out.push({
        check: "vgpu-host",
        gpu: gpu.index,
        message: `GPU ${gpu.index} is a vGPU host serving ${gpu.vgpuHost.active} active vGPU(s) (${gpu.vgpuHost.names.join("; ")}): slicecheck faults no GPU whose vGPUs run other VMs' tenants; shut those VMs down or migrate them, then rerun (or test from inside a guest)`,
      });
    const c = changed.get(gpu.index);
    if (!c?.modeChange) continue;
    for (const h of s.holders) {
      const advice = HOLDER_ADVICE[h] ?? `${h} holds the GPU: stop it`;
      out.push({
        check: "holder",
        gpu: gpu.index,
        message: `GPU ${gpu.index}: a MIG mode change needs every GPU client gone, but ${advice}; then rerun`,
      });
    }
    const passthrough = gpu.virtualization?.toLowerCase() === "pass-through";
    if (c.modeNeedsReset && passthrough) {
      out.push({
        check: "passthrough",
        gpu: gpu.index,
        message: `GPU ${gpu.index} (${gpu.name}) runs in a VM passthrough: its MIG mode change needs a GPU reset, which the hypervisor may block (the mode would stay pending); change the mode from the host or with a VM reboot, then rerun`,
      });
    } else if (c.resetPending && !intent.allowReset) {
      const mode = gpu.migPending ? "Enabled" : "Disabled";
      out.push({
        check: "pending-reset",
        gpu: gpu.index,
        message: `GPU ${gpu.index}: MIG mode ${mode} is pending and takes effect only with a GPU reset (nvidia-smi --gpu-reset -i ${gpu.index}); rerun with --allow-reset to let slicecheck reset it`,
      });
    }
  }
  return out;
}

/** apply's interlocks: every refusal for the GPUs that would change. */
export function interlocks(
  s: NodeSnapshot,
  changing: readonly GpuToChange[],
  o: { allowReset: boolean },
): string[] {
  const intents = changing.map(({ gpu, plan, modeNeedsReset }) => ({
    gpu,
    modeChange: plan.setMode !== null || plan.resetPending,
    resetPending: plan.resetPending,
    modeNeedsReset,
  }));
  return nodeRefusals(s, { changing: intents, faults: false, allowReset: o.allowReset }).map(
    (r) => r.message,
  );
}

/** Before a suite faults or disturbs a node's tenants: Slurm must be drained (when the
 * inventory names the Slurm node) and no GPU may run someone else's compute process. There is
 * no override for a foreign process: faulting a GPU someone uses is never a test. */
export function faultRefusals(s: NodeSnapshot): string[] {
  return nodeRefusals(s, { changing: [], faults: true, allowReset: false }).map((r) => r.message);
}
