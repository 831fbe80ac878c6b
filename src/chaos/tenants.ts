// Soft routes: N tenants (2 to 7) share one GPU, each running the stress for the same window, so
// that the slowdown per tenant count can be read against one tenant alone (the route's own
// baseline). Time-slicing gives each of N an Nth (k8s-device-plugin README, workloads.md 5.2);
// MPS without thread limits shares the SMs the same way in the simulator's model.
import type { Instance } from "../workloads/instances.js";
import type { InstanceOutcome } from "../workloads/launcher.js";
import { stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import type { PlanEntry } from "./plan.js";

export type TenantStep = (
  insts: Instance[],
  spec: WorkloadSpec,
  scenario: string,
  tenants: number,
) => Promise<InstanceOutcome[]>;

/** How long the first tenant waits on the node for the last before it starts alone: launches
 * over SSH from a loaded control machine are seconds apart at worst, and a window whose tenants
 * did not overlap is judged broken anyway (slowdownPerTenants). */
export const TENANT_GATE_S = 15;

/** The tenant counts `--tenants` names (`2-7`, `2,4,7`), each between 2 and 7. */
export function parseTenants(s: string): number[] | null {
  const out = new Set<number>();
  for (const part of s.split(",").map((x) => x.trim())) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return null;
    const a = Number(m[1]);
    const b = m[2] !== undefined ? Number(m[2]) : a;
    if (a < 2 || b > 7 || b < a) return null;
    for (let n = a; n <= b; n++) out.add(n);
  }
  return [...out].sort((x, y) => x - y);
}

/** One window per tenant count; the copies of the device get labels `<gpu>/<tag>-t1…tN`. */
export async function tenantWindows(
  p: PlanEntry,
  counts: readonly number[],
  durationS: number,
  scenario: string,
  label: (i: Instance, l: string) => void,
  step: TenantStep,
): Promise<void> {
  const tag = p.aggressorLabel.replace(/-a$/, "");
  for (const n of counts) {
    const copies = Array.from({ length: n }, (_, k) => {
      const c = { ...p.aggressor };
      label(c, `${tag}-t${k + 1}`);
      return c;
    });
    await step(copies, stressSpec(durationS), scenario, n);
  }
}
