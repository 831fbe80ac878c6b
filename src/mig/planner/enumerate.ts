// Every distinct multiset of GPU-instance profiles that fits one GPU at one driver.
//
// The search grows layouts one instance at a time. Which further instances fit depends only on
// the occupied memory slices, so each (multiset, occupancy) state is expanded once: a multiset
// reachable through many placements is remembered with the set of occupancies it can leave, and
// the search is linear in the number of such states (a few thousand on an 8-slice GPU).

import { rangeMask } from "./place.js";
import type { Combination, PlannerCatalog, PlannerProfile } from "./types.js";

/** Whether instance counts (by profile index) respect maxima, pair rules and the OFA budget. */
export function countsAllowed(catalog: PlannerCatalog, counts: readonly number[]): boolean {
  let ofa = 0;
  for (let i = 0; i < catalog.profiles.length; i++) {
    const p = catalog.profiles[i]!;
    const n = counts[i] ?? 0;
    if (n > p.maxInstances) return false;
    ofa += n * p.ofa;
  }
  if (ofa > catalog.ofaTotal) return false;
  for (const [a, b] of catalog.forbiddenPairs) {
    const ia = catalog.profiles.findIndex((p) => p.id === a);
    const ib = catalog.profiles.findIndex((p) => p.id === b);
    if (ia >= 0 && ib >= 0 && (counts[ia] ?? 0) > 0 && (counts[ib] ?? 0) > 0) return false;
  }
  return true;
}

export function combinationOf(
  profiles: readonly PlannerProfile[],
  counts: readonly number[],
): Combination {
  const out: Combination = {};
  profiles.forEach((p, i) => {
    const n = counts[i] ?? 0;
    if (n > 0) out[p.name] = n;
  });
  return out;
}

const cache = new WeakMap<PlannerCatalog, readonly (readonly number[])[]>();

/**
 * Count vectors (indexed like `catalog.profiles`) of every non-empty multiset that fits, biggest
 * layouts first. Cached per catalogue object: explaining many layouts reuses one enumeration.
 */
export function fittingCounts(catalog: PlannerCatalog): readonly (readonly number[])[] {
  const hit = cache.get(catalog);
  if (hit) return hit;
  const profiles = catalog.profiles;
  const full = rangeMask(0, catalog.memorySlices);
  // multiset key → occupancies that realise it
  const seen = new Map<string, { counts: number[]; masks: Set<number> }>();
  let frontier = new Map<string, { counts: number[]; masks: Set<number> }>([
    ["", { counts: profiles.map(() => 0), masks: new Set([0]) }],
  ]);
  while (frontier.size > 0) {
    const next = new Map<string, { counts: number[]; masks: Set<number> }>();
    for (const { counts, masks } of frontier.values()) {
      for (let i = 0; i < profiles.length; i++) {
        const p = profiles[i]!;
        const grown = [...counts];
        grown[i] = (grown[i] ?? 0) + 1;
        if (!countsAllowed(catalog, grown)) continue;
        const key = grown.join(",");
        for (const used of masks) {
          for (const s of p.starts) {
            const m = rangeMask(s, p.memorySlices);
            if ((m & used) !== 0 || (m & ~full) !== 0) continue;
            let state = next.get(key);
            if (!state) {
              state = { counts: grown, masks: new Set() };
              next.set(key, state);
            }
            state.masks.add(used | m);
          }
        }
      }
    }
    for (const [k, v] of next) seen.set(k, v);
    frontier = next;
  }
  const sliceSum = (c: readonly number[]) =>
    c.reduce((a, n, i) => a + n * profiles[i]!.memorySlices, 0);
  const total = (c: readonly number[]) => c.reduce((a, n) => a + n, 0);
  const out = [...seen.values()]
    .map((v) => v.counts)
    .sort((a, b) => {
      const d = sliceSum(b) - sliceSum(a) || total(b) - total(a);
      if (d !== 0) return d;
      for (let i = 0; i < a.length; i++) {
        if (a[i] !== b[i]) return (b[i] ?? 0) - (a[i] ?? 0);
      }
      return 0;
    });
  cache.set(catalog, out);
  return out;
}

/** Every distinct non-empty multiset of GI profiles that fits, as `{name: count}` maps. */
export function enumerateCombinations(catalog: PlannerCatalog): Combination[] {
  return fittingCounts(catalog).map((c) => combinationOf(catalog.profiles, c));
}
