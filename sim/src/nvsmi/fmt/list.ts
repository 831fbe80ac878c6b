// `nvidia-smi -L`. R450/R460: `  MIG 1g.5gb Device 0: (UUID: MIG-GPU-<uuid>/<gi>/<ci>)`, single
// spaces; R470+: the name padded to 12 after `MIG `, the index `%2d`, `MIG-<uuid>` per CI. The
// name is the CI profile's, so a `1g.10gb+me` GI shows as `MIG 1g.10gb` (PRICKLE).
// mig-reference.md §5 dates per-CI UUIDs to R570, but the GUIDE's own "Driver < 570" example
// (R470, an A100 with two 3g GIs of three 1c CIs each) already lists six distinct UUIDs, so every
// CI has its own UUID from R470 on here.

import { reachable } from "../../fence.js";
import type { Layout } from "../layout.js";
import { legacyMigUuid } from "../uuid.js";
import { ciProfileOf, displayName, type GpuView, migDevices } from "../view.js";

/**
 * `fence`: the devices a job's device cgroup lets it open (../../fence.ts). NVML enumerates only
 * what it can open, so a fenced job's listing holds its own GPU(s) and MIG device(s), numbered
 * from 0 in that listing. The references hold no capture of `-L` inside a fenced job; numbering
 * from 0 is this simulation's reading of NVML enumerating what it can open.
 */
export function formatList(
  views: readonly GpuView[],
  layout: Layout,
  fence: Set<string> | null = null,
): string[] {
  const out: string[] = [];
  let shown = 0;
  for (const v of views) {
    const devices = v.gpu.mig.current
      ? migDevices(v).filter(({ ci }) => reachable(fence, ci.uuid))
      : [];
    if (!reachable(fence, v.gpu.uuid) && devices.length === 0) continue;
    const index = fence === null ? v.gpu.index : shown;
    shown++;
    out.push(`GPU ${index}: ${displayName(v, layout)} (UUID: ${v.gpu.uuid})`);
    devices.forEach(({ gi, ci }, n) => {
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
