// Compute-instance splits: `1c.3g.40gb: 3` asks for three 1-slice CIs inside 3g.40gb GPU
// instances. mig-parted fills a GI with CIs until the next one does not fit, then creates
// another GI; this packs the same way but tries every open GI (first fit, largest CIs first),
// which never needs more GIs than mig-parted and needs fewer when sizes are mixed.

import { rangeMask } from "./place.js";
import type { PlannerCiProfile, PlannerProfile } from "./types.js";

export interface CiRequest {
  ci: PlannerCiProfile;
  count: number;
}

export interface PackedGi {
  cis: { ci: PlannerCiProfile; start: number }[];
}

export function packComputeInstances(
  gi: PlannerProfile,
  requests: readonly CiRequest[],
): PackedGi[] {
  const items = requests
    .flatMap((r) => Array.from({ length: r.count }, () => r.ci))
    .sort((a, b) => b.computeSlices - a.computeSlices || a.id - b.id);
  const open: { used: number; cis: { ci: PlannerCiProfile; start: number }[] }[] = [];
  const full = rangeMask(0, gi.computeSlices);
  for (const ci of items) {
    let placed = false;
    for (const g of open) {
      const already = g.cis.filter((c) => c.ci.id === ci.id).length;
      if (already >= ci.maxInstances) continue;
      const start = ci.starts.find((s) => {
        const m = rangeMask(s, ci.computeSlices);
        return (m & g.used) === 0 && (m & ~full) === 0;
      });
      if (start === undefined) continue;
      g.used |= rangeMask(start, ci.computeSlices);
      g.cis.push({ ci, start });
      placed = true;
      break;
    }
    if (!placed) {
      const start = ci.starts[0] ?? 0;
      open.push({ used: rangeMask(start, ci.computeSlices), cis: [{ ci, start }] });
    }
  }
  return open.map((g) => ({ cis: [...g.cis].sort((a, b) => a.start - b.start) }));
}
