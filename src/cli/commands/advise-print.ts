// What `slicecheck advise` prints: the distribution table, the profile fits per product, the
// recommendation with its figures and, for a layout, the planner's slice map and commands (as
// `slicecheck plan` shows them). `--json` carries the same, per job included.

import { PRODUCTS } from "../../mig/catalog/index.js";
import { builtinCatalog, combinationText, sliceMap } from "../../mig/planner/index.js";
import type { Analysis } from "../../report/advise/analyse.js";
import type { Recommendation } from "../../report/advise/recommend.js";
import { jobHistogramSvg } from "../../report/svg/job-histogram.js";
import type { Out } from "../context.js";

const h1 = (x: number) => x.toFixed(1);
const pct = (x: number) => `${Math.round(x * 100)} %`;

export function verdictLine(r: Recommendation): string {
  if (r.kind === "no-data") return "no advice: no GPU jobs";
  if (r.kind === "do-not-slice") return "do not slice: keep whole cards";
  const layout = combinationText(r.layout);
  if (!r.split) return `slice every GPU: ${layout}`;
  const nodes =
    r.split.wholeNodes === null
      ? `${pct(r.split.wholeShare)} of the GPUs whole, the rest`
      : `${r.split.wholeNodes} node(s) whole, ${r.split.slicedNodes}`;
  return `split: ${nodes} sliced as ${layout}`;
}

export function histogramOf(a: Analysis, r: Recommendation): string {
  return jobHistogramSvg({
    title: `${a.jobs.length} GPU jobs, ${h1(a.totalGpuHours)} GPU-hours (${a.product})`,
    verdict: verdictLine(r),
    bySize: a.histogram.map((c) => ({
      label: `${c.gpus} GPU`,
      jobs: c.jobs,
      gpuHours: c.gpuHours,
    })),
    byProfile: a.demand
      .filter((d) => d.profile !== "several GPUs")
      .map((d) => ({ label: d.profile, jobs: d.jobs, gpuHours: d.gpuHours })),
  });
}

function printFigures(a: Analysis, io: Out): void {
  io.out("GPUs/job   jobs   GPU-hours   share");
  for (const c of a.histogram)
    io.out(
      `${c.gpus.padStart(8)} ${String(c.jobs).padStart(6)} ${h1(c.gpuHours).padStart(11)} ${pct(c.share).padStart(7)}`,
    );
  io.out(`smallest profile on ${a.product} (single-GPU jobs by GPU memory used, else requested):`);
  for (const d of a.demand)
    io.out(
      `  ${d.profile.padEnd(14)} ${String(d.jobs).padStart(5)} jobs ${h1(d.gpuHours).padStart(9)} GPU-hours`,
    );
  if (a.underHalfBusy.accounted > 0)
    io.out(
      `peak GPU utilization under 50 %: ${a.underHalfBusy.jobs} of ${a.underHalfBusy.accounted} jobs with gres/gpuutil accounted`,
    );
  const unknown = a.jobs.filter((j) => j.fit.basis === "unknown" && j.gpus === 1).length;
  if (unknown > 0)
    io.out(
      `note: ${unknown} single-GPU job(s) without gres/gpumem count as whole-card jobs (AccountingStorageTRES=gres/gpumem with AutoDetect=nvml accounts it)`,
    );
  io.out("fits per catalogued product (jobs by smallest profile):");
  for (const p of PRODUCTS) {
    const counts = Object.entries(a.fitCounts[p] ?? {}).map(([k, n]) => `${k} ${n}`);
    io.out(`  ${p.padEnd(13)} ${counts.join(", ")}`);
  }
}

function printLayout(a: Analysis, r: Extract<Recommendation, { kind: "slice" }>, io: Out): void {
  io.out(`layout for the sliced GPUs: ${combinationText(r.layout)}`);
  for (const l of sliceMap(r.plan.instances, builtinCatalog(a.product).memorySlices))
    io.out(`    ${l}`);
  io.out(
    `  serves ${h1(r.servedGpuHours)} of the small jobs' ${h1(r.servedGpuHours + r.unservedGpuHours)} GPU-hours, ${r.jobsPerGpu.toFixed(1)} jobs at once per GPU (${h1(r.slicedCardHours)} card-hours)`,
  );
  io.out("  commands (per GPU):");
  for (const c of r.plan.commands) io.out(`    ${c.join(" ")}`);
  io.out("  mig-parted config:");
  for (const l of r.config.trimEnd().split("\n")) io.out(`    ${l}`);
}

export function printAdvice(
  source: string,
  a: Analysis,
  r: Recommendation,
  svg: string | undefined,
  io: Out,
): void {
  io.out(
    `${source}: ${a.jobs.length} GPU jobs, ${h1(a.totalGpuHours)} GPU-hours (${a.skipped.cpuOnly} CPU-only and ${a.skipped.neverRan} never-started jobs left out); product ${a.product}`,
  );
  printFigures(a, io);
  io.out(`advice: ${verdictLine(r)}`);
  for (const why of r.reasons) io.out(`  why: ${why}`);
  if (r.kind === "slice") {
    for (const n of r.notes) io.out(`  note: ${n}`);
    printLayout(a, r, io);
  }
  if (svg) io.out(`histogram: ${svg}`);
}

export function adviseJson(
  source: string,
  a: Analysis,
  r: Recommendation,
  svg: string | undefined,
) {
  const advice =
    r.kind === "slice"
      ? {
          ...r,
          plan: { fits: r.plan.fits, instances: r.plan.instances, commands: r.plan.commands },
        }
      : r;
  return {
    source,
    product: a.product,
    verdict: r.kind,
    summary: verdictLine(r),
    figures: { ...a, jobs: undefined },
    jobs: a.jobs,
    advice,
    svg: svg ?? null,
  };
}
