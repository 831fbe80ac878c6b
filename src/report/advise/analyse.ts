// The figures behind `slicecheck advise`: the job-size distribution of a sacct history (GPUs per
// job, GPU memory used, elapsed time, GPU-hours) and, per job, the smallest MIG profile it fits
// on each catalogued product. The recommendation built from them is in recommend.ts.

import { PRODUCTS, type ProductKey } from "../../mig/catalog/index.js";
import { fitJob, type JobFit, sliceProfiles } from "./fit.js";
import type { SacctJob } from "./sacct.js";

export interface JobRow {
  id: string;
  name: string;
  state: string;
  gpus: number;
  elapsedS: number;
  gpuHours: number;
  gpuMemUsedGiB: number | null;
  gpuUtilPeak: number | null;
  /** On the product advised for. */
  fit: JobFit;
  /** Smallest profile per catalogued product (null: none, the job asks for several GPUs). */
  fits: Record<string, string | null>;
}

export interface SizeClass {
  /** `1`, `2`, … `8`, `9+`. */
  gpus: string;
  jobs: number;
  gpuHours: number;
  /** Of all GPU-hours. */
  share: number;
}

export interface ProfileDemand {
  /** A profile, or `whole card` / `several GPUs`. */
  profile: string;
  jobs: number;
  /** GPU-hours these jobs held as whole cards. */
  gpuHours: number;
}

export interface Analysis {
  product: ProductKey;
  jobs: JobRow[];
  skipped: { cpuOnly: number; neverRan: number };
  totalGpuHours: number;
  histogram: SizeClass[];
  /** Single-GPU jobs by their smallest profile on `product`, smallest first, then the rest. */
  demand: ProfileDemand[];
  /** GPU-hours of jobs that need whole cards: several GPUs, or a full-GPU profile. */
  wholeGpuHours: number;
  multiGpuHours: number;
  /** GPU-hours of jobs that fit a MIG profile smaller than the whole GPU. */
  sliceableGpuHours: number;
  /** The card-hours those jobs would take on their instances (each its share of the card). */
  sliceableCardHours: number;
  /** The seed's case for MIG: jobs whose accounted peak utilization stayed under 50 %. */
  underHalfBusy: { jobs: number; accounted: number };
  /** Per product: jobs by smallest profile (`several GPUs`, `whole card` included). */
  fitCounts: Record<string, Record<string, number>>;
}

export const SEVERAL = "several GPUs";
export const WHOLE = "whole card";

const sizeLabel = (gpus: number) => (gpus > 8 ? "9+" : String(gpus));

function histogram(rows: JobRow[], total: number): SizeClass[] {
  const by = new Map<string, SizeClass>();
  for (const r of [...rows].sort((a, b) => a.gpus - b.gpus)) {
    const key = sizeLabel(r.gpus);
    const c = by.get(key) ?? { gpus: key, jobs: 0, gpuHours: 0, share: 0 };
    c.jobs += 1;
    c.gpuHours += r.gpuHours;
    by.set(key, c);
  }
  for (const c of by.values()) c.share = total > 0 ? c.gpuHours / total : 0;
  return [...by.values()];
}

function demandOf(rows: JobRow[], product: ProductKey): ProfileDemand[] {
  const order = [...sliceProfiles(product).map((p) => p.name), WHOLE, SEVERAL];
  const by = new Map<string, ProfileDemand>();
  for (const r of rows) {
    const key = r.gpus > 1 ? SEVERAL : r.fit.wholeCard ? WHOLE : (r.fit.profile ?? WHOLE);
    const d = by.get(key) ?? { profile: key, jobs: 0, gpuHours: 0 };
    d.jobs += 1;
    d.gpuHours += r.gpuHours;
    by.set(key, d);
  }
  return order.flatMap((k) => by.get(k) ?? []);
}

/** The card share of one instance: the larger of its memory and compute shares. */
function cardShare(product: ProductKey, profile: string): number {
  const all = sliceProfiles(product);
  const whole = all[all.length - 1];
  const p = all.find((x) => x.name === profile);
  if (!p || !whole) return 1;
  return Math.max(p.memorySlices / whole.memorySlices, p.computeSlices / whole.computeSlices);
}

function rowOf(job: SacctJob, product: ProductKey): JobRow {
  const fits: Record<string, string | null> = {};
  for (const p of PRODUCTS) fits[p] = fitJob(job, p).profile;
  return {
    id: job.id,
    name: job.name,
    state: job.state,
    gpus: job.gpus,
    elapsedS: job.elapsedS,
    gpuHours: (job.gpus * job.elapsedS) / 3600,
    gpuMemUsedGiB: job.gpuMemUsedBytes === null ? null : job.gpuMemUsedBytes / 1024 ** 3,
    gpuUtilPeak: job.gpuUtilPeak,
    fit: fitJob(job, product),
    fits,
  };
}

function fitCounts(rows: JobRow[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const p of PRODUCTS) {
    const whole = sliceProfiles(p).at(-1)?.name;
    const counts: Record<string, number> = {};
    for (const r of rows) {
      const f = r.fits[p];
      const key = f === null || f === undefined ? SEVERAL : f === whole ? WHOLE : f;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    out[p] = counts;
  }
  return out;
}

export function analyse(all: readonly SacctJob[], product: ProductKey): Analysis {
  const gpuJobs = all.filter((j) => j.gpus > 0);
  const ran = gpuJobs.filter((j) => j.elapsedS > 0);
  const rows = ran.map((j) => rowOf(j, product));
  const total = rows.reduce((s, r) => s + r.gpuHours, 0);
  const whole = rows.filter((r) => r.fit.wholeCard);
  const small = rows.filter((r) => !r.fit.wholeCard);
  const accounted = rows.filter((r) => r.gpuUtilPeak !== null);
  return {
    product,
    jobs: rows,
    skipped: { cpuOnly: all.length - gpuJobs.length, neverRan: gpuJobs.length - ran.length },
    totalGpuHours: total,
    histogram: histogram(rows, total),
    demand: demandOf(rows, product),
    wholeGpuHours: whole.reduce((s, r) => s + r.gpuHours, 0),
    multiGpuHours: rows.filter((r) => r.gpus > 1).reduce((s, r) => s + r.gpuHours, 0),
    sliceableGpuHours: small.reduce((s, r) => s + r.gpuHours, 0),
    sliceableCardHours: small.reduce(
      (s, r) => s + r.gpuHours * cardShare(product, r.fit.profile ?? ""),
      0,
    ),
    underHalfBusy: {
      jobs: accounted.filter((r) => (r.gpuUtilPeak ?? 100) < 50).length,
      accounted: accounted.length,
    },
    fitCounts: fitCounts(rows),
  };
}
