// The live profile catalogue of a node's GPUs, read for the records while MIG is on: a driver
// upgrade that renames, drops or resizes a profile shows up in `slicecheck diff` only if the
// run kept what `nvidia-smi mig -lgip`/`-lgipp` said at the time.
import { parseLgip } from "../nvsmi/lgip.js";
import { parseLgipp } from "../nvsmi/lgipp.js";
import type { GpuInstancePlacements, GpuInstanceProfile } from "../nvsmi/types.js";
import type { BesideLockOptions, Transport } from "../transport/types.js";

export interface GpuTopology {
  profiles: GpuInstanceProfile[];
  placements: GpuInstancePlacements[];
}

/** The two reads, in the order topologyOf takes their answers. */
export const TOPOLOGY_READS = [
  ["nvidia-smi", "mig", "-lgip"],
  ["nvidia-smi", "mig", "-lgipp"],
] as const;

interface Answer {
  stdout: string;
  exitCode: number | null;
}

/** Per GPU index; empty when the node could not be read (the run itself reports why). `exec`:
 * passed on to both reads (a read that waits for the lease, its abort). */
export async function readTopology(
  t: Transport,
  exec?: BesideLockOptions,
): Promise<Map<number, GpuTopology>> {
  try {
    // Both at once: a round trip each, and neither depends on the other.
    const [lgip, lgipp] = await Promise.all(
      TOPOLOGY_READS.map((argv) => t.exec({ argv }, { timeoutMs: 60_000, ...exec })),
    );
    return topologyOf(lgip, lgipp);
  } catch {
    // Topology is evidence for diff, not a check of its own: a failed read must not fail the run.
    return new Map();
  }
}

/** The catalogue from the answers of TOPOLOGY_READS; empty unless both answered. */
export function topologyOf(lgip?: Answer, lgipp?: Answer): Map<number, GpuTopology> {
  const out = new Map<number, GpuTopology>();
  if (!lgip || !lgipp) return out;
  if (lgip.exitCode !== 0 || lgipp.exitCode !== 0) return out;
  try {
    for (const g of parseLgip(lgip.stdout).gpus)
      out.set(g.index, { profiles: g.profiles, placements: [] });
    for (const g of parseLgipp(lgipp.stdout).gpus) {
      const entry = out.get(g.index) ?? { profiles: [], placements: [] };
      entry.placements = g.placements;
      out.set(g.index, entry);
    }
    return out;
  } catch {
    // Evidence, not a check (readTopology): what was parsed before the failure is kept.
    return out;
  }
}
