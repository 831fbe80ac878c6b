// The seed's figures from an observation's samples (pure): how often a GPU or GPU instance is
// under 50 % busy (the case for slicing: "the A100 is under 50 % busy 90 % of the time"), its
// busy mean and percentiles, the memory its tenants use against what it offers, and its idle
// time. They are recorded as measurements of suite and workload `observe` (store/observe.ts),
// so that `slicecheck diff` compares an observation before slicing with one after.
import type { ObservedUnit, ObserveSample } from "./observe.js";
import type { Metric } from "./specs.js";
import { CUDA_CONTEXT_FLOOR_MIB } from "./utilization.js";

/** Under this busy share a sample counts as idle: a GPU's own housekeeping and a monitoring
 * agent show a few percent, a tenant's job more. */
export const IDLE_BUSY_PCT = 5;
/** The seed's threshold: a card under it most of the time is the case for MIG. */
export const UNDER_PCT = 50;

export interface UnitFigures {
  samples: number;
  /** Samples with a busy reading (nvidia-smi has none for a GI). */
  busySamples: number;
  busyMean: number | null;
  busyP50: number | null;
  busyP95: number | null;
  /** 0-1: share of busy readings under UNDER_PCT. */
  under50Share: number | null;
  /** 0-1: share of samples that are idle (see isIdle). */
  idleShare: number | null;
  memUsedMean: number | null;
  memUsedMax: number | null;
  memOfferedMiB: number | null;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  const k = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[k]!;
}

/** Idle: busy under IDLE_BUSY_PCT where the source reads busy; where it does not (nvidia-smi
 * under MIG), memory in use under the CUDA context floor, i.e. no process holds the unit. A
 * sample with neither reading is not counted either way. */
export function isIdle(s: ObserveSample): boolean | null {
  if (s.busyPct !== null) return s.busyPct < IDLE_BUSY_PCT;
  if (s.memUsedMiB !== null) return s.memUsedMiB < CUDA_CONTEXT_FLOOR_MIB;
  return null;
}

const round = (x: number, d = 1) => Number(x.toFixed(d));
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export function unitFigures(
  samples: readonly ObserveSample[],
  memOfferedMiB: number | null,
): UnitFigures {
  const busy = samples.map((s) => s.busyPct).filter((x): x is number => x !== null);
  const mem = samples.map((s) => s.memUsedMiB).filter((x): x is number => x !== null);
  const idle = samples.map(isIdle).filter((x): x is boolean => x !== null);
  const sorted = [...busy].sort((a, b) => a - b);
  return {
    samples: samples.length,
    busySamples: busy.length,
    busyMean: busy.length ? round(mean(busy)) : null,
    busyP50: busy.length ? percentile(sorted, 50) : null,
    busyP95: busy.length ? percentile(sorted, 95) : null,
    under50Share: busy.length ? busy.filter((b) => b < UNDER_PCT).length / busy.length : null,
    idleShare: idle.length ? idle.filter(Boolean).length / idle.length : null,
    memUsedMean: mem.length ? round(mean(mem), 0) : null,
    memUsedMax: mem.length ? Math.max(...mem) : null,
    memOfferedMiB,
  };
}

/** The figures as measurements (shares in %); a figure the source could not give is left out. */
export function figureMetrics(f: UnitFigures): Metric[] {
  const out: Metric[] = [{ metric: "samples", value: f.samples, unit: "count" }];
  const add = (metric: string, value: number | null, unit: string) => {
    if (value !== null) out.push({ metric, value, unit });
  };
  add("busy_mean", f.busyMean, "%");
  add("busy_p50", f.busyP50, "%");
  add("busy_p95", f.busyP95, "%");
  add("under50_share", f.under50Share === null ? null : round(100 * f.under50Share), "%");
  add("idle_share", f.idleShare === null ? null : round(100 * f.idleShare), "%");
  add("memory_used_mean", f.memUsedMean, "MiB");
  add("memory_used_max", f.memUsedMax, "MiB");
  add("memory_offered", f.memOfferedMiB, "MiB");
  return out;
}

const pct = (x: number | null) => (x === null ? "n/a" : `${Math.round(100 * x)} %`);

/** A unit as the summary names it: `GPU 0`, `GPU 0 GI 2 (3g.40gb)`. */
export function unitName(u: Pick<ObservedUnit, "gpu" | "gpuInstanceId" | "profile">): string {
  return u.gpuInstanceId === null
    ? `GPU ${u.gpu}`
    : `GPU ${u.gpu} GI ${u.gpuInstanceId} (${u.profile})`;
}

/** The seed's sentence for a unit: `GPU 0 under 50 % busy 90 % of the time (mean 31 %, p95
 * 44 %); memory 3.1 of 79.6 GiB in use (4 %); idle 0 % of the time`. */
export function summaryLine(u: ObservedUnit, f: UnitFigures): string {
  const busy =
    f.under50Share === null
      ? "busy not read (nvidia-smi gives no utilization under MIG; run nv-hostengine for DCGM)"
      : `under ${UNDER_PCT} % busy ${pct(f.under50Share)} of the time (mean ${f.busyMean} %, p95 ${f.busyP95} %)`;
  const gib = (m: number) => (m / 1024).toFixed(1);
  const mem =
    f.memUsedMean === null
      ? "memory not read"
      : f.memOfferedMiB
        ? `memory ${gib(f.memUsedMean)} of ${gib(f.memOfferedMiB)} GiB in use (${Math.round((100 * f.memUsedMean) / f.memOfferedMiB)} %)`
        : `memory ${gib(f.memUsedMean)} GiB in use`;
  return `${unitName(u)} ${busy}; ${mem}; idle ${pct(f.idleShare)} of the time`;
}
