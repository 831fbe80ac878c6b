// The partitioning route of each GPU and what it promises (DESIGN "Checks"; reference
// workloads.md 4.5 and 5): MIG promises compute, memory and fault isolation; MPS with a pinned
// memory limit promises memory isolation only; MPS without limits and time-slicing promise none;
// vGPU gives each VM its own framebuffer (memory isolation) while compute is shared or throttled
// by the host's vGPU scheduler, whose policy says which (best effort: shared, a busy neighbour
// slows you; equal share: 1/N of the GPU per active vGPU; fixed share: a fixed slice per vGPU
// of its type); a whole card with one tenant has nobody to be isolated from. A soft route's
// weakness is measured and reported as a characterisation, never as a violation.
import { parseVirtualization } from "../nvsmi/virt.js";
import type { Transport } from "../transport/types.js";
import type { Instance } from "../workloads/instances.js";
import { busKey } from "./probes.js";

export type RouteKind = "mig" | "mps" | "time-slicing" | "whole-card" | "vgpu-guest" | "vgpu-host";

export interface Route {
  kind: RouteKind;
  /** MPS: the clients' CUDA_MPS_PINNED_DEVICE_MEM_LIMIT in MiB, when one is set (or known). */
  memLimitMiB?: number | null;
  /** MPS: the clients' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, when set. */
  threadPct?: number | null;
  /** vGPU: the scheduler policy, when `-q` shows it (a host does; a guest may not). */
  scheduler?: string | null;
  /** Inside a vGPU guest (a vgpu-guest route, or a soft route run inside one): the guest's
   * framebuffer in MiB as its nvidia-smi shows it (memory.total), which is its memory cap; null
   * when it could not be read (the memory promise is then undecided, never passed). */
  vgpuFramebufferMiB?: number | null;
}

/** Whether the route runs inside a vGPU guest, whose framebuffer is its own. */
export const inVgpuGuest = (r: Route): boolean =>
  r.kind === "vgpu-guest" || r.vgpuFramebufferMiB !== undefined;

export interface Promises {
  compute: boolean;
  memory: boolean;
  fault: boolean;
}

export function promisesOf(r: Route): Promises {
  if (r.kind === "mig") return { compute: true, memory: true, fault: true };
  // Inside a vGPU guest the guest's framebuffer is its own whatever shares it within the VM.
  if (r.kind === "mps")
    return {
      compute: false,
      memory: (r.memLimitMiB ?? null) !== null || inVgpuGuest(r),
      fault: false,
    };
  if ((r.kind === "time-slicing" || r.kind === "whole-card") && inVgpuGuest(r))
    return { compute: false, memory: true, fault: false };
  // vGPU: each VM's framebuffer is its own; compute is the scheduler's (computeExpectation),
  // never isolation; a fault of one VM's vGPU is not promised to stay in it.
  if (r.kind === "vgpu-guest" || r.kind === "vgpu-host")
    return { compute: false, memory: true, fault: false };
  return { compute: false, memory: false, fault: false };
}

/** What compute behaviour a vGPU's scheduler policy leads one to expect; null off vGPU. */
export function computeExpectation(r: Route): string | null {
  if (r.kind !== "vgpu-host" && !inVgpuGuest(r)) return null;
  const p = (r.scheduler ?? "").toUpperCase().replace(/[\s-]+/g, "_");
  if (p.includes("BEST_EFFORT"))
    return "compute shared (best effort scheduler): a busy neighbour VM slows this vGPU";
  if (p.includes("EQUAL_SHARE"))
    return "compute throttled to an equal share (equal share scheduler): 1/N of the GPU per active vGPU";
  if (p.includes("FIXED_SHARE"))
    return "compute throttled to a fixed share (fixed share scheduler): 1/(the type's maximum vGPUs per GPU) each";
  return "compute shared or throttled by the host's vGPU scheduler, whose policy is not shown here (nvidia-smi vgpu -ss on the host)";
}

export function describeRoute(r: Route): string {
  const own = describeOwn(r);
  if (r.kind === "vgpu-guest" || r.vgpuFramebufferMiB === undefined) return own;
  return `${own} in a vGPU guest (${framebufferText(r.vgpuFramebufferMiB)})`;
}

const framebufferText = (mib: number | null | undefined) =>
  mib != null ? `framebuffer ${mib} MiB` : "framebuffer unknown";

function describeOwn(r: Route): string {
  switch (r.kind) {
    case "mig":
      return "MIG";
    case "mps": {
      const lim = [
        r.memLimitMiB != null ? `pinned memory limit ${r.memLimitMiB} MiB` : null,
        r.threadPct != null ? `active threads ${r.threadPct} %` : null,
      ].filter(Boolean);
      return lim.length ? `MPS (${lim.join(", ")})` : "MPS (no limits)";
    }
    case "time-slicing":
      return "time-slicing";
    case "whole-card":
      return "whole card";
    case "vgpu-guest":
      return `vGPU (guest${r.vgpuFramebufferMiB !== undefined ? `, ${framebufferText(r.vgpuFramebufferMiB)}` : ""}${r.scheduler ? `, scheduler ${r.scheduler}` : ""})`;
    case "vgpu-host":
      return `vGPU (host${r.scheduler ? `, scheduler ${r.scheduler}` : ""})`;
  }
}

export function promiseText(r: Route): string {
  const p = promisesOf(r);
  const kept = (["compute", "memory", "fault"] as const).filter((k) => p[k]);
  const promise = kept.length ? `promises ${kept.join(", ")} isolation` : "promises no isolation";
  // A vGPU's memory promise is the guest's framebuffer: named, it is the cap the checks hold.
  const fb =
    r.vgpuFramebufferMiB !== undefined && p.memory
      ? ` (the vGPU guest's own framebuffer: ${r.vgpuFramebufferMiB != null ? `${r.vgpuFramebufferMiB} MiB` : "size unknown"})`
      : "";
  const compute = computeExpectation(r);
  return compute ? `${promise}${fb}; ${compute}` : `${promise}${fb}`;
}

export interface GpuFacts {
  gpu: number;
  pciBusId: string | null;
  migEnabled: boolean;
  virtualizationMode: string | null;
  scheduler: string | null;
  mpsDaemon: boolean;
  computeProcesses: number;
  /** memory.total in MiB (a vGPU guest's framebuffer); absent when not read, null unreadable. */
  memoryTotalMiB?: number | null;
}

/** Pure: the route of one GPU from what the node showed. */
export function routeOf(f: GpuFacts): Route {
  if (f.virtualizationMode === "Host VGPU") return { kind: "vgpu-host", scheduler: f.scheduler };
  if (f.virtualizationMode === "VGPU")
    return {
      kind: "vgpu-guest",
      ...(f.scheduler ? { scheduler: f.scheduler } : {}),
      ...(f.memoryTotalMiB !== undefined ? { vgpuFramebufferMiB: f.memoryTotalMiB } : {}),
    };
  if (f.migEnabled) return { kind: "mig" };
  // The limits an MPS daemon gives its clients are set per client or by control commands the
  // node does not echo back: unknown here, so no memory promise is credited.
  if (f.mpsDaemon) return { kind: "mps", memLimitMiB: null, threadPct: null };
  // Several processes on one card without MPS are time-sliced (CUDA's default); one is alone.
  return f.computeProcesses >= 2 ? { kind: "time-slicing" } : { kind: "whole-card" };
}

/** Reads the facts of every GPU the instances are on (`-q`, `vgpu -q`, the MPS control pipe,
 * the compute processes) and gives each its route. A fact that cannot be read is absent, not a
 * failure: the route then rests on MIG mode alone. */
export async function readRoutes(
  t: Transport,
  instances: readonly Instance[],
): Promise<Map<number, Route>> {
  const run = async (cmd: { argv: string[] } | { shell: string }) => {
    try {
      const r = await t.exec(cmd, { timeoutMs: 30_000 });
      return { code: r.exitCode, out: r.stdout };
    } catch {
      return { code: null, out: "" };
    }
  };
  // One round trip's worth of waiting: the five readings go out together.
  const [q, vq, mps, pci, apps] = await Promise.all([
    run({ argv: ["nvidia-smi", "-q"] }),
    run({ argv: ["nvidia-smi", "vgpu", "-q"] }),
    run({ shell: "echo get_server_list | nvidia-cuda-mps-control" }),
    // memory.total: in a vGPU guest, the vGPU's framebuffer (NVML reports the guest's own).
    run({
      argv: ["nvidia-smi", "--query-gpu=index,pci.bus_id,memory.total", "--format=csv,noheader"],
    }),
    run({ argv: ["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid", "--format=csv,noheader"] }),
  ]);
  const virt = parseVirtualization(q.code === 0 ? q.out : "", vq.code === 0 ? vq.out : "");
  const busOf = new Map<number, string>();
  const totalOf = new Map<number, number>();
  for (const l of pci.out.split("\n")) {
    const [i, bus, total] = l.split(",").map((x) => x.trim());
    if (i && bus && /^\d+$/.test(i)) busOf.set(Number(i), bus);
    const mib = /^(\d+)\s*MiB$/.exec(total ?? "");
    if (i && mib) totalOf.set(Number(i), Number(mib[1]));
  }
  const out = new Map<number, Route>();
  for (const gpu of new Set(instances.map((i) => i.gpu))) {
    const bus = busOf.get(gpu) ?? null;
    const v = bus ? virt.find((x) => busKey(x.pciBusId) === busKey(bus)) : undefined;
    const procs = apps.out
      .split("\n")
      .filter((l) => bus && l.includes(",") && busKey(l.split(",")[0]!) === busKey(bus)).length;
    out.set(
      gpu,
      routeOf({
        gpu,
        pciBusId: bus,
        migEnabled: instances.some((i) => i.gpu === gpu && i.gpuInstanceId !== null),
        virtualizationMode: v?.mode ?? null,
        scheduler: v?.scheduler ?? null,
        mpsDaemon: mps.code === 0,
        computeProcesses: procs,
        memoryTotalMiB: totalOf.get(gpu) ?? null,
      }),
    );
  }
  return out;
}
