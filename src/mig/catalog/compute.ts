// Compute-instance profiles of a GPU instance (`-lcip`, `-cci`). The captures show the IDs
// (0=1c, 1=2c, 2=3c, 3=4c, the whole-GI one = the GI's default, 7 for a 1-slice double-memory
// GI), the counts (1c.3g 3/3, 2c.3g 1/1, 3g 1/1; 1c.2g 2, 2g 1) and the SMs (1c = 14 on A100
// and A30, 16 on H100; 2c.3g = 28 on A100). The rest is derived (marked below).

import type { CiProfile, GiProfileSpec } from "./types.js";

/** The GI profile name without a media-extension suffix: CIs and `-L` drop `+me`. */
export function baseProfileName(giName: string): string {
  return giName.replace(/(\+me(\.all)?|-me|\+gfx)$/, "");
}

/**
 * SMs of a `k`-slice CI inside a larger GI. Derived: in every capture it equals the SMs of the
 * product's plain `k`g GI profile (1c = 1g's 14 or 16, 2c.3g = 2g's 28). Where the product has
 * no such GI profile (3c on A30) it is k times the 1-slice SMs.
 */
function smForSlices(k: number, table: readonly GiProfileSpec[]): number {
  const plain = table.find((p) => p.computeSlices === k && p.nvmlIndex === k - 1 && k <= 4);
  if (plain) return plain.sm;
  const one = table.find((p) => p.computeSlices === 1 && p.nvmlIndex === 0);
  return k * (one?.sm ?? 0);
}

/**
 * Starts of `k`-slice CIs in a `c`-slice GI. Captured: 1c at 0,1,2 in a 3g GI. Derived: larger
 * CIs are packed from slice 0 in steps of their size (2c.7g at 0,2,4; 3c.7g at 0,3).
 */
function startsFor(k: number, c: number): number[] {
  const out: number[] = [];
  for (let s = 0; s + k <= c; s += k) out.push(s);
  return out;
}

export function ciProfilesFor(gi: GiProfileSpec, table: readonly GiProfileSpec[]): CiProfile[] {
  const c = gi.computeSlices;
  const base = baseProfileName(gi.name);
  const out: CiProfile[] = [];
  // Partial CIs exist for 1..4 slices below the GI size (NVML has 1/2/3/4-slice CI profiles;
  // 1c..3c on a 4g GI, 1c..4c on a 7g GI).
  for (let k = 1; k < c && k <= 4; k++) {
    const starts = startsFor(k, c);
    out.push({
      id: k - 1,
      name: `${k}c.${base}`,
      computeSlices: k,
      sm: smForSlices(k, table),
      instances: starts.length,
      starts,
      size: k,
      isDefault: false,
    });
  }
  out.push({
    id: gi.defaultCiProfileId,
    name: base,
    computeSlices: c,
    sm: gi.sm,
    instances: 1,
    starts: [0],
    size: c,
    isDefault: true,
  });
  return out;
}
