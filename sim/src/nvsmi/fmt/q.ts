// `nvidia-smi -q` (head of each GPU's block, as far as slicecheck reads it) and
// `nvidia-smi vgpu -q`. The head follows the real captures line for line
// (captures/nvidia-smi_-q_*: banner, Driver/CUDA Version, Attached GPUs, `GPU <bus id>`, Product
// Name, Persistence Mode, MIG Mode Current/Pending). The captures stop at MIG Mode, so what
// follows is RECONSTRUCTED and kept to what the harness reads: the `GPU Virtualization Mode`
// block with NVML's mode names (None, Pass-Through, VGPU in a guest, Host VGPU on a host), and on
// a vGPU host the scheduler policy line; then the `FB Memory Usage` block (Total, Used, Free).
// `vgpu -q` prints `Active vGPUs` per GPU on a host and NVIDIA's refusal elsewhere (both
// reconstructed: no capture in the reference).
import type { Layout } from "../layout.js";
import type { SimState } from "../state.js";
import { displayName, type GpuView, gpuUsedMiB } from "../view.js";

const pad = (k: string, indent: number) => `${" ".repeat(indent)}${k}`.padEnd(42);
const row = (k: string, v: string, indent = 4) => `${pad(k, indent)}: ${v}`;

export function formatQuery(state: SimState, vs: GpuView[], layout: Layout, now: Date): string[] {
  const out = [
    "",
    "==============NVSMI LOG==============",
    "",
    row("Timestamp", now.toString().slice(0, 24), 0),
    row("Driver Version", state.driver, 0),
    row("CUDA Version", state.cuda, 0),
    "",
    row("Attached GPUs", String(vs.length), 0),
  ];
  for (const v of vs) {
    const g = v.gpu;
    const virt = g.virtualization;
    out.push(
      `GPU ${g.pciBusId}`,
      row("Product Name", displayName(v, layout)),
      row("Persistence Mode", g.persistenceMode ? "Enabled" : "Disabled"),
      "    MIG Mode",
      row("Current", v.catalog ? (g.mig.current ? "Enabled" : "Disabled") : "N/A", 8),
      row("Pending", v.catalog ? (g.mig.pending ? "Enabled" : "Disabled") : "N/A", 8),
      row("GPU UUID", g.uuid),
      "    GPU Virtualization Mode",
      row("Virtualization Mode", virt?.mode ?? "None", 8),
      row("Host VGPU Mode", virt?.mode === "Host VGPU" ? "SR-IOV" : "N/A", 8),
    );
    if (virt?.mode === "Host VGPU" && virt.scheduler)
      out.push(row("vGPU Scheduler Policy", virt.scheduler, 8));
    // RECONSTRUCTED like the block above (the captures stop at MIG Mode): NVML's memory info,
    // which in a vGPU guest is the vGPU's framebuffer.
    const used = gpuUsedMiB(v);
    out.push(
      "    FB Memory Usage",
      row("Total", `${v.memoryMiB} MiB`, 8),
      row("Used", `${used} MiB`, 8),
      row("Free", `${Math.max(0, v.memoryMiB - used)} MiB`, 8),
    );
  }
  out.push("");
  return out;
}

/**
 * Per host GPU its `Active vGPUs` count, then one block per active vGPU: `vGPU ID`, then indented
 * `VM Name`, `vGPU Name` (type names as NVIDIA's vGPU types read, `<board>-<framebuffer GB>C`
 * for compute), `vGPU Type`, `Guest Driver Version`. RECONSTRUCTED from the layout NVIDIA's
 * vGPU user guide shows (no capture in the reference); the ids and VM names are the simulator's.
 */
export function formatVgpuQuery(vs: GpuView[]): { lines: string[]; code: number } {
  const hosts = vs.filter((v) => v.gpu.virtualization?.mode === "Host VGPU");
  if (hosts.length === 0) return { lines: ["No supported devices in vGPU mode"], code: 6 };
  return {
    lines: hosts.flatMap((v) => {
      const n = v.gpu.virtualization?.activeVgpus ?? 0;
      const board = v.smiName.replace(/^NVIDIA\s+/, "").split(/\s+/)[0];
      const gb = Math.floor(v.memoryMiB / 1024 / Math.max(1, n));
      return [
        `GPU ${v.gpu.pciBusId}`,
        row("Active vGPUs", String(n)),
        ...Array.from({ length: n }, (_, k) => [
          row("vGPU ID", String(3251634178 + v.gpu.index * 16 + k)),
          row("VM Name", `vm-gpu${v.gpu.index}-${k + 1}`, 8),
          row("vGPU Name", `NVIDIA ${board}-${gb}C`, 8),
          row("vGPU Type", "0", 8),
          row("Guest Driver Version", "N/A", 8),
        ]).flat(),
      ];
    }),
    code: 0,
  };
}
