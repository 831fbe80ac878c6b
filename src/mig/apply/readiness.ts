// doctor's "ready" verdict: what the interlocks of apply and of the fault-injecting suites would
// refuse on this node now, judged by the same nodeRefusals on the same readNode snapshot. doctor
// knows no layout, so for apply it assumes the change any MIG layout needs: every MIG-capable
// GPU gets (or keeps) MIG on, and one not yet on changes its mode.
import type { NodeSpec } from "../../inventory/types.js";
import type { Transport } from "../../transport/types.js";
import { type GpuIntent, nodeRefusals, type Refusal } from "./interlocks.js";
import { readNode } from "./read.js";
import { modeChangeNeedsReset } from "./target.js";
import type { NodeSnapshot } from "./types.js";

export interface Blocker extends Refusal {
  /** What it would refuse: applying a MIG layout (apply, run --layout), or injecting faults
   * (the isolation suite, suites declaring injectsFaults). */
  blocks: "apply" | "isolation";
}

export function readiness(s: NodeSnapshot): Blocker[] {
  const changing: GpuIntent[] = s.gpus
    .filter((g) => g.migCapable)
    .map((gpu) => {
      const modeNeedsReset = modeChangeNeedsReset(gpu);
      return {
        gpu,
        modeChange: !(gpu.migCurrent && gpu.migPending),
        // As compare.ts: MIG on is pending and only a reset makes it effective.
        resetPending: !gpu.migCurrent && gpu.migPending && modeNeedsReset,
        modeNeedsReset,
      };
    });
  const apply = nodeRefusals(s, { changing, faults: false, allowReset: false });
  const faults = nodeRefusals(s, { changing: [], faults: true, allowReset: false });
  return [
    ...apply.map((r) => ({ ...r, blocks: "apply" as const })),
    ...faults.map((r) => ({ ...r, blocks: "isolation" as const })),
  ];
}

export async function readReadiness(
  t: Transport,
  spec: NodeSpec,
  timeoutMs?: number,
): Promise<Blocker[]> {
  return readiness(await readNode(t, spec, timeoutMs));
}
