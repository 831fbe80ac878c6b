// `--query-gpu` and `--query-compute-apps` with `--format=csv[,noheader][,nounits]`. Values are
// joined with ", "; a value nvidia-smi cannot give reads `[N/A]` (utilization.gpu under MIG,
// PRICKLE query-gpu.csv). Units stay in the header with `nounits` and leave the values.

import type { CsvFormat } from "../args.js";
import type { Layout } from "../layout.js";
import type { SimProcess, SimState } from "../state.js";
import { gpuUtilPercent } from "../tenant.js";
import { displayName, type GpuView, gpuUsedMiB } from "../view.js";

interface Ctx {
  state: SimState;
  layout: Layout;
  now: Date;
}

interface Field<T> {
  name: string;
  unit?: string;
  value: (x: T, ctx: Ctx) => string | number;
}

const NA = "[N/A]";

function timestamp(d: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}/${p(d.getMonth() + 1)}/${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function migMode(v: GpuView, on: boolean): string {
  if (!v.catalog) return NA;
  return on ? "Enabled" : "Disabled";
}

export const COMPUTE_CAP = { ampere: "8.0", hopper: "9.0", blackwell: "10.0" } as const;

const GPU_FIELDS: Field<GpuView>[] = [
  { name: "timestamp", value: (_, c) => timestamp(c.now) },
  { name: "driver_version", value: (_, c) => c.state.driver },
  { name: "count", value: (_, c) => c.state.gpus.length },
  { name: "name", value: (v, c) => displayName(v, c.layout) },
  { name: "uuid", value: (v) => v.gpu.uuid },
  { name: "pci.bus_id", value: (v) => v.gpu.pciBusId },
  { name: "pci.device_id", value: (v) => v.pciId },
  { name: "index", value: (v) => v.gpu.index },
  { name: "persistence_mode", value: (v) => (v.gpu.persistenceMode ? "Enabled" : "Disabled") },
  { name: "pstate", value: (v) => v.gpu.telemetry.perf },
  { name: "memory.total", unit: "MiB", value: (v) => v.memoryMiB },
  { name: "memory.used", unit: "MiB", value: (v) => gpuUsedMiB(v) },
  { name: "memory.free", unit: "MiB", value: (v) => v.memoryMiB - gpuUsedMiB(v) },
  {
    name: "utilization.gpu",
    unit: "%",
    value: (v) => (v.gpu.mig.current ? NA : gpuUtilPercent(v.gpu)),
  },
  { name: "temperature.gpu", value: (v) => v.gpu.telemetry.tempC },
  { name: "power.draw", unit: "W", value: (v) => v.gpu.telemetry.powerDrawW.toFixed(2) },
  { name: "power.limit", unit: "W", value: (v) => v.powerCapW.toFixed(2) },
  { name: "fan.speed", unit: "%", value: (v) => v.gpu.telemetry.fanPercent ?? NA },
  { name: "mig.mode.current", value: (v) => migMode(v, v.gpu.mig.current) },
  { name: "mig.mode.pending", value: (v) => migMode(v, v.gpu.mig.pending) },
  { name: "compute_mode", value: () => "Default" },
  // A blocked GPU reset has one cause in the simulator, a VM passthrough (GUIDE), and
  // `virtualization_mode` is where a real node shows that; a planted vGPU shows NVML's mode
  // names, as `-q` does (VGPU in a guest, Host VGPU on a host).
  {
    name: "virtualization_mode",
    value: (v) => v.gpu.virtualization?.mode ?? (v.gpu.resetSupported ? "None" : "Pass-Through"),
  },
  { name: "ecc.mode.current", value: () => "Enabled" },
  { name: "ecc.errors.uncorrected.volatile.total", value: (v) => v.gpu.eccUncorrected ?? 0 },
  { name: "compute_cap", value: (v) => (v.architecture ? COMPUTE_CAP[v.architecture] : "8.9") },
];

const GPU_ALIASES: Record<string, string> = {
  gpu_name: "name",
  gpu_uuid: "uuid",
  gpu_bus_id: "pci.bus_id",
};

interface App {
  view: GpuView;
  proc: SimProcess;
}

const APP_FIELDS: Field<App>[] = [
  { name: "timestamp", value: (_, c) => timestamp(c.now) },
  { name: "gpu_name", value: (a, c) => displayName(a.view, c.layout) },
  { name: "gpu_bus_id", value: (a) => a.view.gpu.pciBusId },
  { name: "gpu_uuid", value: (a) => a.view.gpu.uuid },
  { name: "pid", value: (a) => a.proc.pid },
  { name: "process_name", value: (a) => a.proc.name },
  { name: "used_gpu_memory", unit: "MiB", value: (a) => a.proc.usedMiB },
];

const APP_ALIASES: Record<string, string> = {
  name: "process_name",
  used_memory: "used_gpu_memory",
};

export type QueryOutcome = { ok: true; lines: string[] } | { ok: false; badField: string };

function render<T>(
  rows: readonly T[],
  requested: readonly string[],
  fields: readonly Field<T>[],
  aliases: Record<string, string>,
  format: CsvFormat,
  ctx: Ctx,
): QueryOutcome {
  const chosen: Field<T>[] = [];
  for (const f of requested) {
    const name = aliases[f] ?? f;
    const field = fields.find((x) => x.name === name);
    if (!field) return { ok: false, badField: f };
    chosen.push(field);
  }
  const lines: string[] = [];
  if (format.header) {
    lines.push(chosen.map((f) => (f.unit ? `${f.name} [${f.unit}]` : f.name)).join(", "));
  }
  for (const row of rows) {
    const cells = chosen.map((f) => {
      const v = String(f.value(row, ctx));
      return f.unit && format.units && v !== NA ? `${v} ${f.unit}` : v;
    });
    lines.push(cells.join(", "));
  }
  return { ok: true, lines };
}

export function queryGpus(
  views: readonly GpuView[],
  fields: readonly string[],
  format: CsvFormat,
  ctx: Ctx,
): QueryOutcome {
  return render(views, fields, GPU_FIELDS, GPU_ALIASES, format, ctx);
}

export function queryApps(
  views: readonly GpuView[],
  fields: readonly string[],
  format: CsvFormat,
  ctx: Ctx,
): QueryOutcome {
  // Compute apps only; on MIG they are reported against the parent GPU's UUID (PRICKLE).
  const apps = views.flatMap((view) =>
    view.gpu.processes.filter((p) => p.type !== "G").map((proc) => ({ view, proc })),
  );
  return render(apps, fields, APP_FIELDS, APP_ALIASES, format, ctx);
}
