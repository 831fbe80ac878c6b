// The pictures of one GPU, from the sign-off model: its slice map, its isolation matrix (when
// isolation ran on it) and its instances' throughput against their share (when stress ran).

import { hasRole } from "../../util/suite-registry.js";
import type { CheckRecord } from "../../verdicts/checks.js";
import type { PictureStatus } from "../svg/common.js";
import { isolationMatrixSvg } from "../svg/isolation-matrix.js";
import { sliceMapSvg } from "../svg/slice-map.js";
import { throughputSvg } from "../svg/throughput.js";
import type { GpuSummary } from "./model.js";

export interface GpuPictures {
  sliceMap: string;
  matrix: string | null;
  throughput: string | null;
}

const st = (s: CheckRecord["status"] | null | undefined): PictureStatus => s ?? "none";
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function gpuPictures(g: GpuSummary, checks: readonly CheckRecord[]): GpuPictures {
  const title = `${g.node} GPU ${g.gpu} (${g.name})`;
  const stress = checks.filter(
    (c) => hasRole(c.suite, "throughput") && c.node === g.node && c.gpu === g.gpu && c.instance,
  );
  const stressOf = (uuid: string) => stress.find((c) => c.instance?.uuid === uuid);
  const sliceMap = sliceMapSvg({
    title: `${title}: slice map`,
    slices: g.slices,
    instances: g.instances
      .slice()
      .sort((a, b) => (a.placement ?? "").localeCompare(b.placement ?? ""))
      .map((i) => ({
        label: i.label,
        profile: i.profile,
        placement: i.placement,
        status: st(stressOf(i.uuid)?.status),
      })),
  });
  let throughput: string | null = null;
  if (stress.length) {
    // Runs before the share check carry no median: the median per SM of all instances then.
    const all = stress
      .map((c) => {
        const t = num(c.figures.tflops);
        const sm = num(c.figures.sm);
        return t !== null && sm ? t / sm : null;
      })
      .filter((x): x is number => x !== null);
    const fallback = median(all);
    throughput = throughputSvg({
      title: `${title}: stress throughput against its share`,
      bars: stress.map((c) => {
        const sm = num(c.figures.sm);
        const med = num(c.figures.gpuMedianPerSm) ?? (stress.length > 1 ? fallback : null);
        return {
          label: c.instance!.label,
          profile: c.instance!.profile,
          tflops: num(c.figures.tflops),
          expected: num(c.figures.expectedTflops) ?? (med !== null && sm ? med * sm : null),
          status: c.status,
        };
      }),
    });
  }
  let matrix: string | null = null;
  if (g.scenarios.length) {
    const faults = [...new Set(g.scenarios.map((s) => s.fault))];
    const labels = g.instances.map((i) => i.label);
    for (const s of g.scenarios)
      for (const l of [s.aggressor, ...s.victims.map((v) => v.label)])
        if (!labels.includes(l)) labels.push(l);
    matrix = isolationMatrixSvg({
      title: `${title}: isolation matrix`,
      instances: labels,
      names: Object.fromEntries(g.instances.map((i) => [i.label, i.profile])),
      tolerance: g.scenarios.find((s) => s.tolerance !== null)?.tolerance ?? null,
      faults: faults.map((f) => {
        const mine = g.scenarios.filter((s) => s.fault === f);
        return {
          fault: f,
          aggressors: mine.map((s) => s.aggressor),
          own: Object.fromEntries(mine.map((s) => [s.aggressor, st(s.ownStatus)])),
          cells: mine.flatMap((s) =>
            s.victims.map((v) => ({
              aggressor: s.aggressor,
              victim: v.label,
              // Exact: the cell shows it to 2 decimals, and rounding twice (0.59503 → 0.595 →
              // "0.59") would print a figure other than the check's own.
              ratio: v.baseline && v.underFault !== null ? v.underFault / v.baseline : null,
              status: st(v.status),
              died: v.died,
            })),
          ),
        };
      }),
    });
  }
  return { sliceMap, matrix, throughput };
}
