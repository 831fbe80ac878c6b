// A planted tenant's activity (`sim fault NODE tenant`): a process of someone else whose SM
// activity has a known mean, so that `slicecheck observe` has a real-looking tenant mix to
// measure. Each reading draws the tenant's busy share uniformly within ±TENANT_JITTER points of
// its mean (narrowed near 0 and 100 so the mean stays the planted one): real utilization
// jitters from one sample to the next, and a mean that is only right on average is what an
// observation must recover.
import type { SimGpu, SimProcess } from "./state.js";

/** Half-width of the uniform jitter around a tenant's mean, in percentage points. */
export const TENANT_JITTER = 15;

/** One reading of a tenant's busy share, 0-100. */
export function tenantReading(meanPct: number, rand = Math.random): number {
  const half = Math.min(TENANT_JITTER, meanPct, 100 - meanPct);
  return meanPct + (rand() * 2 - 1) * half;
}

/** The busy share (0-100) the tenants among `procs` give their GPU or GPU instance in one
 * reading; null when none of them is a tenant. */
export function tenantsBusy(procs: readonly SimProcess[], rand = Math.random): number | null {
  const tenants = procs.filter((p) => p.busyPct !== undefined);
  if (tenants.length === 0) return null;
  return Math.min(
    100,
    tenants.reduce((s, p) => s + tenantReading(p.busyPct!, rand), 0),
  );
}

/** What nvidia-smi's utilization.gpu (and the table's GPU-Util) reads on a whole GPU: its
 * tenants' activity in whole percent when it has tenants, else the telemetry's figure. */
export function gpuUtilPercent(gpu: SimGpu): number {
  const t = tenantsBusy(gpu.processes);
  return t === null ? gpu.telemetry.gpuUtilPercent : Math.round(t);
}
