// The recommendation of `slicecheck advise`, from the figures of analyse.ts. Conservative rules,
// in this order (README "advise"):
//   1. No GPU job in the history: nothing to advise.
//   2. Jobs that need whole cards (several GPUs, a full-GPU profile, or GPU memory unknown) hold
//      at least DO_NOT_SLICE_SHARE of the GPU-hours: do not slice. Large training wants whole
//      cards and NVLink; slicing would take capacity from the jobs that use most of it.
//   3. They hold at least SPLIT_SHARE: split the nodes. Whole cards keep the capacity the large
//      jobs used; the rest is sliced. The share of whole GPUs is the large jobs' GPU-hours over
//      the capacity both kinds need (large jobs' GPU-hours + the small jobs' card-hours on their
//      instances), rounded up to whole nodes when the node count is known.
//   4. Otherwise slice every node.
// The layout for the sliced GPUs is the combination of GPU-instance profiles that needs the fewest
// cards for the small jobs' demand (job-hours per smallest profile): the jobs its instances can
// hold run on slices, so many at once per GPU; the rest would need whole cards. It is planned by
// the planner so that it is valid on the product, with the GPU-hours of the history it serves.

import type { Combination, PlannerCatalog, PlanResult } from "../../mig/planner/index.js";
import { builtinCatalog, enumerateCombinations, planRequest } from "../../mig/planner/index.js";
import type { Analysis } from "./analyse.js";
import { sliceProfiles } from "./fit.js";

export const DO_NOT_SLICE_SHARE = 0.5;
export const SPLIT_SHARE = 0.1;

export interface Split {
  /** Share of the GPUs to keep whole (0-1). */
  wholeShare: number;
  /** When the node count is known. */
  wholeNodes: number | null;
  slicedNodes: number | null;
}

export type Recommendation =
  | { kind: "no-data"; reasons: string[] }
  | { kind: "do-not-slice"; reasons: string[] }
  | {
      kind: "slice";
      reasons: string[];
      /** What the advice leaves out (jobs without a place in it). */
      notes: string[];
      /** Null: slice every node. */
      split: Split | null;
      layout: Combination;
      plan: PlanResult;
      /** The mig-parted config of the layout (`devices: all`). */
      config: string;
      /** GPU-hours of the history's small jobs the layout's instance mix serves, and not. */
      servedGpuHours: number;
      unservedGpuHours: number;
      /** Small jobs one sliced GPU runs at once, in the history's mix. */
      jobsPerGpu: number;
      /** Card-hours the served jobs take on the sliced GPUs. */
      slicedCardHours: number;
    };

interface Scored {
  combination: Combination;
  /** Share of the small jobs' hours whose profile some instance of the layout can hold. */
  hosted: number;
  /** Jobs the layout runs per sliced GPU at once, for that hosted mix. */
  perGpu: number;
  /** Cards per job-hour of the small jobs: hosted on slices, the rest on whole cards. */
  cost: number;
  instances: number;
}

type Sizes = ReadonlyMap<string, readonly [memory: number, compute: number]>;

const holds = (size: Sizes, q: string, p: string) => {
  const [qm, qc] = size.get(q) ?? [0, 0];
  const [pm, pc] = size.get(p) ?? [0, 0];
  return qm >= pm && qc >= pc;
};

/** Can one GPU of this layout run `t` jobs at once in the demand's mix? Each job takes an
 * instance of its own profile or a larger one, smallest demand first into the smallest slot. */
function feasible(
  t: number,
  combination: Combination,
  demand: ReadonlyMap<string, number>,
  size: Sizes,
) {
  const cap = new Map(Object.entries(combination));
  const bySize = (a: string, b: string) => {
    const [am, ac] = size.get(a) ?? [0, 0];
    const [bm, bc] = size.get(b) ?? [0, 0];
    return am - bm || ac - bc;
  };
  const slots = [...cap.keys()].sort(bySize);
  for (const p of [...demand.keys()].sort(bySize)) {
    let left = t * (demand.get(p) ?? 0);
    for (const q of slots) {
      if (left <= 1e-12 || !holds(size, q, p)) continue;
      const take = Math.min(left, cap.get(q) ?? 0);
      cap.set(q, (cap.get(q) ?? 0) - take);
      left -= take;
    }
    if (left > 1e-9) return false;
  }
  return true;
}

function score(combination: Combination, demand: ReadonlyMap<string, number>, size: Sizes): Scored {
  const instances = Object.values(combination).reduce((x, n) => x + n, 0);
  const hostedKeys = [...demand.keys()].filter((p) =>
    Object.keys(combination).some((q) => holds(size, q, p)),
  );
  const hosted = hostedKeys.reduce((s, p) => s + (demand.get(p) ?? 0), 0);
  const mix = new Map(hostedKeys.map((p) => [p, (demand.get(p) ?? 0) / (hosted || 1)]));
  let [lo, hi] = [0, instances];
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (feasible(mid, combination, mix, size)) lo = mid;
    else hi = mid;
  }
  const cost = hosted > 0 && lo > 0 ? hosted / lo + (1 - hosted) : Number.POSITIVE_INFINITY;
  return { combination, hosted, perGpu: lo, cost, instances };
}

/** The layout that needs the fewest cards for the small jobs' mix (hosted on its instances,
 * the rest on whole cards), then the one with the most instances, then the fewest profiles. */
function bestLayout(a: Analysis, catalog: PlannerCatalog): Scored | null {
  const profiles = sliceProfiles(a.product);
  const whole = profiles.at(-1)?.name;
  const size: Sizes = new Map(
    profiles.map((p) => [p.name, [p.memorySlices, p.computeSlices] as const]),
  );
  const small = a.demand.filter((d) => size.has(d.profile) && d.profile !== whole);
  const hours = small.reduce((s, d) => s + d.gpuHours, 0);
  if (hours <= 0) return null;
  const demand = new Map(small.map((d) => [d.profile, d.gpuHours / hours]));
  let best: Scored | null = null;
  for (const c of enumerateCombinations(catalog)) {
    // Media (+me) variants and the full-GPU profile are not slicing.
    if (Object.keys(c).some((p) => !size.has(p) || p === whole)) continue;
    const s = score(c, demand, size);
    if (!Number.isFinite(s.cost)) continue;
    const better =
      !best ||
      s.cost < best.cost - 1e-9 ||
      (Math.abs(s.cost - best.cost) <= 1e-9 &&
        (s.instances > best.instances ||
          (s.instances === best.instances &&
            Object.keys(s.combination).length < Object.keys(best.combination).length)));
    if (better) best = s;
  }
  return best;
}

export function migPartedConfig(layout: Combination): string {
  const devices = Object.entries(layout).map(([p, n]) => `        ${p}: ${n}`);
  return [
    "version: v1",
    "mig-configs:",
    "  slicecheck-advised:",
    "    - devices: all",
    "      mig-enabled: true",
    "      mig-devices:",
    ...devices,
    "",
  ].join("\n");
}

function split(
  a: Analysis,
  best: Scored,
  wholeShareOfHours: number,
  nodes: number | undefined,
): Split | null {
  if (wholeShareOfHours < SPLIT_SHARE) return null;
  const wholeNeed = a.wholeGpuHours + (1 - best.hosted) * a.sliceableGpuHours;
  const slicedNeed = (best.hosted * a.sliceableGpuHours) / best.perGpu;
  const wholeShare = wholeNeed / (wholeNeed + slicedNeed);
  if (nodes === undefined) return { wholeShare, wholeNodes: null, slicedNodes: null };
  const wholeNodes = Math.min(nodes, Math.max(1, Math.ceil(wholeShare * nodes)));
  return { wholeShare, wholeNodes, slicedNodes: nodes - wholeNodes };
}

const pct = (x: number) => `${(x * 100).toFixed(0)} %`;

export function recommend(a: Analysis, o: { nodes?: number } = {}): Recommendation {
  if (a.totalGpuHours <= 0)
    return { kind: "no-data", reasons: ["no GPU job with an elapsed time in the history"] };
  const wholeShare = a.wholeGpuHours / a.totalGpuHours;
  const why = `jobs that need whole cards (several GPUs, a full-GPU profile, or GPU memory not accounted) hold ${pct(wholeShare)} of ${a.totalGpuHours.toFixed(1)} GPU-hours`;
  if (wholeShare >= DO_NOT_SLICE_SHARE)
    return {
      kind: "do-not-slice",
      reasons: [`${why} (≥ ${pct(DO_NOT_SLICE_SHARE)}): keep whole cards`],
    };
  const catalog = builtinCatalog(a.product);
  const best = bestLayout(a, catalog);
  if (!best) return { kind: "do-not-slice", reasons: [`${why}; no job fits a MIG profile`] };
  const s = split(a, best, wholeShare, o.nodes);
  if (s && s.slicedNodes === 0)
    return { kind: "do-not-slice", reasons: [`${why}: all ${o.nodes} node(s) are needed whole`] };
  const request = {
    migEnabled: true,
    devices: Object.entries(best.combination).map(([gi, count]) => ({
      key: gi,
      gi,
      ciSlices: null,
      count,
    })),
    placements: {},
  };
  const servedHours = best.hosted * a.sliceableGpuHours;
  const left = a.wholeGpuHours + a.sliceableGpuHours - servedHours;
  const notes =
    !s && left > 0
      ? [
          `${left.toFixed(1)} GPU-hours of jobs no instance of the layout holds (whole-card, multi-GPU or larger) would have no whole card: below ${pct(SPLIT_SHARE)}, no node is kept whole for them`,
        ]
      : [];
  return {
    kind: "slice",
    reasons: [
      s
        ? `${why} (≥ ${pct(SPLIT_SHARE)}, < ${pct(DO_NOT_SLICE_SHARE)}): split the nodes`
        : `${why} (< ${pct(SPLIT_SHARE)}): slice every node`,
      `small jobs: ${a.sliceableGpuHours.toFixed(1)} GPU-hours on whole cards; the layout holds ${pct(best.hosted)} of them, ${best.perGpu.toFixed(1)} at once per GPU: ${(servedHours / best.perGpu).toFixed(1)} card-hours`,
    ],
    split: s,
    notes,
    layout: best.combination,
    plan: planRequest(catalog, request, 0),
    config: migPartedConfig(best.combination),
    servedGpuHours: servedHours,
    unservedGpuHours: a.sliceableGpuHours - servedHours,
    jobsPerGpu: best.perGpu,
    slicedCardHours: servedHours / best.perGpu,
  };
}
