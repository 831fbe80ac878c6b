// Placement and ID allocation for GPU and compute instances: the rules that make `-cgi` refuse
// with Insufficient Resources and that decide which GI ID a request gets.
//
// Placement choice (derived, reproduces every creation sequence in the captures: `-cgi 19`×7 →
// 13,11,12,7,8,9,10; `14,19×5` → 5,13,7,8,9,10; `19,19,14,9` → 13,11,3 then Insufficient
// Resources; `9,14,19` → 2,3,9; `9,19,19,19` → 2,7,8,9; A30 `14,14,5` → 3,4,2): among the free
// placements, take the one that blocks the fewest still-possible placements of all profiles,
// ties to the lowest start. The real driver's algorithm is not public.
//
// GI IDs (derived): the node of the placement in a binary tree over the memory slices, numbered
// breadth-first (8 slices: 0 = whole GPU, 1-2 halves, 3-6 quarters, 7-14 single slices), so a
// 1-slice GI gets 7 + start (3 + start on A30), as the captures show on R460, R525 and R580. The
// captures also show exceptions (GI 1 at 4:4 on 515.86.01; one DCGM host with 13@2:1), so the
// driver allocates from a pool; when the tree ID is taken we fall back to the lowest free one.

import type { CiProfile, GiProfile } from "../../../src/mig/catalog/types.js";
import type { SimCi, SimGi } from "./state.js";
import { type GpuView, giProfileOf } from "./view.js";

function overlaps(a: { start: number; size: number }, b: { start: number; size: number }) {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

/** Full-GPU engine counts: the largest profile's (7g, or 4g on A30) share is the whole GPU. */
function fullGpu(view: GpuView): GiProfile | undefined {
  const ps = view.catalog?.giProfiles ?? [];
  return ps.reduce<GiProfile | undefined>(
    (best, p) => (!best || p.computeSlices > best.computeSlices ? p : best),
    undefined,
  );
}

/** Whether `profile` can be created at `start` next to `gis`. */
export function giFits(view: GpuView, profile: GiProfile, start: number, gis: readonly SimGi[]) {
  const catalog = view.catalog;
  if (!catalog) return false;
  const place = profile.placements.find((p) => p.start === start);
  if (!place) return false;
  const existing = gis.map((g) => ({ gi: g, p: giProfileOf(view, g) }));
  if (existing.some(({ gi }) => overlaps(gi, place))) return false;
  if (existing.filter(({ p }) => p.id === profile.id).length >= profile.instances) return false;
  const full = fullGpu(view);
  const sum = (f: (p: GiProfile) => number) => existing.reduce((s, { p }) => s + f(p), f(profile));
  if (sum((p) => p.computeSlices) > catalog.facts.computeSlices) return false;
  // Shared engines: one OFA and (A100) one JPEG for the whole GPU, which is why only one +me GI
  // can exist and why GH200 refused a second `-cgi 20`.
  if (full) {
    for (const k of ["dec", "enc", "ce", "jpeg", "ofa"] as const) {
      if (sum((p) => p[k]) > full[k]) return false;
    }
  }
  for (const [a, b] of catalog.rules.forbiddenPairs) {
    const ids = new Set([profile.id, ...existing.map(({ p }) => p.id)]);
    if (ids.has(a) && ids.has(b)) return false;
  }
  return true;
}

/** How many (profile, placement) pairs are still possible next to `gis`. */
function possibleCount(view: GpuView, gis: readonly SimGi[]): number {
  let n = 0;
  for (const p of view.catalog?.giProfiles ?? []) {
    for (const pl of p.placements) if (!gis.some((g) => overlaps(g, pl))) n++;
  }
  return n;
}

export function chooseGiStart(
  view: GpuView,
  profile: GiProfile,
  gis: readonly SimGi[],
): number | undefined {
  let best: { start: number; left: number } | undefined;
  for (const pl of profile.placements) {
    if (!giFits(view, profile, pl.start, gis)) continue;
    const probe: SimGi = { id: -1, profileId: profile.id, start: pl.start, size: pl.size, cis: [] };
    const left = possibleCount(view, [...gis, probe]);
    if (!best || left > best.left) best = { start: pl.start, left };
  }
  return best?.start;
}

export function treeGiId(slices: number, start: number, size: number): number {
  const level = Math.log2(slices / size);
  return 2 ** level - 1 + start / size;
}

export function nextGiId(view: GpuView, start: number, size: number, gis: readonly SimGi[]) {
  const slices = view.catalog?.facts.memorySlices ?? 8;
  const taken = new Set(gis.map((g) => g.id));
  const tree = treeGiId(slices, start, size);
  if (Number.isInteger(tree) && !taken.has(tree)) return tree;
  let id = 1;
  while (taken.has(id)) id++;
  return id;
}

/**
 * The `Free` of `-lgip`: how many more GIs of `profile` could be created now, trying them one
 * after the other the way `-cgi` would place them.
 */
export function freeGiCount(view: GpuView, profile: GiProfile): number {
  const gis = [...view.gpu.gis];
  let n = 0;
  for (;;) {
    const start = chooseGiStart(view, profile, gis);
    if (start === undefined) return n;
    gis.push({ id: -1 - n, profileId: profile.id, start, size: profile.memorySlices, cis: [] });
    n++;
  }
}

export function ciFits(ci: CiProfile, start: number, cis: readonly SimCi[], giSlices: number) {
  if (!ci.starts.includes(start) || start + ci.size > giSlices) return false;
  const place = { start, size: ci.size };
  if (cis.some((c) => overlaps(c, place))) return false;
  return cis.filter((c) => c.profileId === ci.id).length < ci.instances;
}

/**
 * CI placement: the lowest free start. 515.86.01 put two 1c CIs of a 3g GI at 0:1 and 1:1. (One
 * 580.173.02 capture shows a lone 1c CI at 2:1, which this does not reproduce; how that CI came
 * to be there is not recorded.)
 */
export function chooseCiStart(ci: CiProfile, cis: readonly SimCi[], giSlices: number) {
  return ci.starts.find((s) => ciFits(ci, s, cis, giSlices));
}

export function nextCiId(cis: readonly SimCi[]): number {
  let id = 0;
  while (cis.some((c) => c.id === id)) id++;
  return id;
}

export function freeCiCount(ci: CiProfile, cis: readonly SimCi[], giSlices: number): number {
  const probe = [...cis];
  let n = 0;
  for (;;) {
    const start = chooseCiStart(ci, probe, giSlices);
    if (start === undefined) return n;
    probe.push({ id: -1 - n, profileId: ci.id, start, size: ci.size, uuid: "" });
    n++;
  }
}
