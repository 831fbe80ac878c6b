// The layouts that fit and are closest to one that does not. Distance counts instances
// dropped, added, or swapped for another profile (a swap is one drop plus one add, counted
// once), so "drop one 2g" and "downsize the 4g to a 3g" both sit at distance 1. Among equals,
// the smallest change in memory and compute slices comes first, then the layouts whose totals
// stay closest to what was asked.

import { combinationOf, fittingCounts } from "./enumerate.js";
import type { Alternative, PlannerCatalog } from "./types.js";

interface Sized {
  name: string;
  memory: number;
  compute: number;
}

const GB = /^(\d+)g\.(\d+)gb/;

function sizeOf(catalog: PlannerCatalog, name: string): Sized {
  const p = catalog.profiles.find((x) => x.name === name);
  if (p) return { name, memory: p.memorySlices, compute: p.computeSlices };
  // A profile this GPU lacks still says its size in its name: `1g.10gb` on an A100-40GB at
  // R470 is 1 compute slice and 10 of the whole GPU's 40 GB, i.e. 2 of 8 memory slices.
  const m = GB.exec(name);
  const whole = catalog.profiles.find((x) => x.memorySlices === catalog.memorySlices);
  const wholeGb = Number(GB.exec(whole?.name ?? "")?.[2] ?? 0);
  const memory =
    m && wholeGb > 0 ? Math.max(1, Math.round((Number(m[2]) / wholeGb) * catalog.memorySlices)) : 0;
  return { name, memory, compute: Number(m?.[1] ?? 0) };
}

/**
 * How much a change alters what was asked: swapped instances cost their difference in memory
 * and compute slices, dropped or added ones their whole size. Swapping a 2g for a 1g.20gb (same
 * memory, one compute slice less) is thus closer than dropping the 2g.
 */
function changeCost(removed: readonly Sized[], added: readonly Sized[]): number {
  let cost = 0;
  const n = Math.max(removed.length, added.length);
  for (let i = 0; i < n; i++) {
    const r = removed[i];
    const a = added[i];
    cost +=
      Math.abs((r?.memory ?? 0) - (a?.memory ?? 0)) +
      Math.abs((r?.compute ?? 0) - (a?.compute ?? 0));
  }
  return cost;
}

function expand(catalog: PlannerCatalog, m: ReadonlyMap<string, number>): Sized[] {
  return [...m]
    .flatMap(([name, n]) => Array.from({ length: n }, () => sizeOf(catalog, name)))
    .sort((a, b) => b.memory - a.memory || b.compute - a.compute || a.name.localeCompare(b.name));
}

function describe(removed: Sized[], added: Sized[]): string {
  const phrases: string[] = [];
  const pairs = Math.min(removed.length, added.length);
  for (let i = 0; i < pairs; i++) {
    phrases.push(`replace ${removed[i]!.name} with ${added[i]!.name}`);
  }
  for (const r of removed.slice(pairs)) phrases.push(`drop ${r.name}`);
  for (const a of added.slice(pairs)) phrases.push(`add ${a.name}`);
  // "drop 1g.10gb, drop 1g.10gb" reads better as "drop 2 × 1g.10gb".
  const counted = new Map<string, number>();
  for (const p of phrases) counted.set(p, (counted.get(p) ?? 0) + 1);
  return [...counted]
    .map(([p, n]) => (n === 1 ? p : p.replace(/^(\w+) /, `$1 ${n} × `)))
    .join(", ");
}

/**
 * Up to `limit` fitting layouts closest to `asked` (GI profile name → count, names the GPU
 * lacks included). `sameAllowed` admits the asked multiset itself, for layouts that fail only
 * on their explicit placements or the driver's placement syntax.
 */
export function closestFits(
  catalog: PlannerCatalog,
  asked: ReadonlyMap<string, number>,
  o: { limit?: number; sameAllowed?: boolean } = {},
): Alternative[] {
  const limit = o.limit ?? 5;
  const want = expand(catalog, asked);
  const wantMemory = want.reduce((a, x) => a + x.memory, 0);
  const wantCompute = want.reduce((a, x) => a + x.compute, 0);
  const scored = fittingCounts(catalog).map((counts) => {
    const combo = combinationOf(catalog.profiles, counts);
    const removed = new Map<string, number>();
    const added = new Map<string, number>();
    for (const [name, n] of asked) {
      const d = n - (combo[name] ?? 0);
      if (d > 0) removed.set(name, d);
    }
    for (const [name, n] of Object.entries(combo)) {
      const d = n - (asked.get(name) ?? 0);
      if (d > 0) added.set(name, d);
    }
    const r = expand(catalog, removed);
    const a = expand(catalog, added);
    const memory = catalog.profiles.reduce((s, p, i) => s + (counts[i] ?? 0) * p.memorySlices, 0);
    const compute = catalog.profiles.reduce((s, p, i) => s + (counts[i] ?? 0) * p.computeSlices, 0);
    return {
      combo,
      removed: r,
      added: a,
      distance: Math.max(r.length, a.length),
      cost: changeCost(r, a),
      // A media-extension instance is offered once per GPU; suggest it only when asked for.
      media: a.filter((x) => /[+-]/.test(x.name)).length,
      memoryGap: Math.abs(memory - wantMemory),
      computeGap: Math.abs(compute - wantCompute),
    };
  });
  return scored
    .filter((s) => s.distance > 0 || o.sameAllowed === true)
    .sort(
      (x, y) =>
        x.distance - y.distance ||
        x.cost - y.cost ||
        x.media - y.media ||
        x.memoryGap - y.memoryGap ||
        x.computeGap - y.computeGap ||
        x.added.length - y.added.length,
    )
    .slice(0, limit)
    .map((s) => ({
      migDevices: s.combo,
      distance: s.distance,
      change:
        s.distance === 0 ? "the same profiles without placements" : describe(s.removed, s.added),
    }));
}
