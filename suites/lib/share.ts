// The share of the GPU an instance's stress got, judged as the stress suite judges it: TFLOP/s
// per SM against the median of the GPU's other instances (MIG gives each instance its own SMs,
// so the per-SM figure should match). The stress suite's figures, and the containers suite's,
// which runs the stress its own way.
import { type CheckHandle, fail, type SuiteInstance, type WorkloadResult } from "slicecheck/suite";

export const perSm = (r: WorkloadResult): number | null => {
  const t = r.metrics.tflops;
  const sm = r.instance.sm;
  return r.status === "passed" && t !== undefined && sm ? t / sm : null;
};

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const round = (x: number, digits = 4) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Fails STRESS_SHARE when `r` is more than `tol` below its neighbours' median per-SM figure. */
export function judgeShare(
  check: CheckHandle,
  node: string,
  inst: SuiteInstance,
  r: WorkloadResult,
  others: readonly WorkloadResult[],
  tol: number,
): void {
  const mine = perSm(r);
  if (mine === null) {
    check.note("no SM count: no share to compare");
    return;
  }
  const theirs = others.map(perSm).filter((x): x is number => x !== null);
  if (theirs.length === 0) {
    check.figures({ perSm: round(mine) });
    check.note("the only instance measured on its GPU: no share to compare");
    return;
  }
  const med = median(theirs);
  const ratio = mine / med;
  check.figures({
    perSm: round(mine),
    gpuMedianPerSm: round(med),
    ratio: round(ratio),
    tolerance: tol,
  });
  if (ratio < 1 - tol)
    fail(
      "STRESS_SHARE",
      `${node} ${inst.label} (${inst.profile}): ${mine.toFixed(4)} TFLOP/s per SM is ${((1 - ratio) * 100).toFixed(1)} % below the median ${med.toFixed(4)} of the GPU's other instances (tolerance ${(tol * 100).toFixed(1)} %)`,
    );
  check.note(`${(ratio * 100).toFixed(1)} % of the GPU's median TFLOP/s per SM`);
}
