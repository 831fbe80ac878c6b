// `nvidia-smi -L`. R450/R460: `  MIG 1g.5gb Device 0: (UUID: MIG-GPU-<uuid>/<gi>/<ci>)`, single
// spaces; R470+: the name padded to 12 after `MIG `, the index `%2d`, `MIG-<uuid>` per CI. The
// name is the CI profile's, so a `1g.10gb+me` GI shows as `MIG 1g.10gb` (PRICKLE).
// mig-reference.md §5 dates per-CI UUIDs to R570, but the GUIDE's own "Driver < 570" example
// (R470, an A100 with two 3g GIs of three 1c CIs each) already lists six distinct UUIDs, so every
// CI has its own UUID from R470 on here.

import type { Layout } from "../layout.js";
import { legacyMigUuid } from "../uuid.js";
import { ciProfileOf, displayName, type GpuView, migDevices } from "../view.js";

export function formatList(views: readonly GpuView[], layout: Layout): string[] {
  const out: string[] = [];
  for (const v of views) {
    out.push(`GPU ${v.gpu.index}: ${displayName(v, layout)} (UUID: ${v.gpu.uuid})`);
    if (!v.gpu.mig.current) continue;
    migDevices(v).forEach(({ gi, ci }, n) => {
      const name = ciProfileOf(v, gi, ci).name;
      if (layout.legacyMigNames) {
        out.push(`  MIG ${name} Device ${n}: (UUID: ${legacyMigUuid(v.gpu.uuid, gi.id, ci.id)})`);
      } else {
        const padded = name.length >= 12 ? `${name} ` : name.padEnd(12);
        out.push(`  MIG ${padded}Device ${String(n).padStart(2)}: (UUID: ${ci.uuid})`);
      }
    });
  }
  return out;
}
