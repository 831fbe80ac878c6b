// stress: every MIG instance (or whole GPU) of every node computes without errors for the
// whole duration, at its share of the GPU. The workload starts on all instances of all nodes at
// once (that is what a partitioned GPU is for); each instance's test then judges its own result,
// and its Allure duration is the span its workload really ran.
//
// The share: MIG gives each instance its own SMs, so TFLOP/s per SM should be the same for every
// instance of one GPU. An instance more than --tolerance below the median per-SM figure of its
// neighbours does not get its share (a driver that slows one profile, a neighbour that steals
// its time). The neighbours are the reference because the whole GPU's throughput is never
// measured while it is partitioned; the median keeps one slow neighbour from moving it.
import {
  current,
  fail,
  forEachGpu,
  forEachInstance,
  forEachNode,
  harness,
  type SuiteInstance,
} from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";
import { median, perSm } from "./lib/share.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  runsWorkloads: true,
  labels: { epic: "MIG partition validation", feature: "Stress" },
});
const stress = run.workload("stress");

/** The neighbours' per-SM figures (they ran in the same batch, so they are ready together). */
async function neighboursPerSm(inst: SuiteInstance, all: readonly SuiteInstance[]) {
  const out: number[] = [];
  for (const other of all) {
    if (other.uuid === inst.uuid) continue;
    const v = perSm(await stress.result(other));
    if (v !== null) out.push(v);
  }
  return out;
}

describe("stress", () => {
  before(() => stress.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance to stress", () =>
        brokenIf(node.error ?? `${node.name}: no MIG instance and no GPU without MIG`));
    forEachGpu(node, (gpu) => {
      // A GPU that fell off the bus runs nothing: it fails by name, never drops out of the count.
      if (gpu.lost)
        it("is on the bus", () =>
          fail(
            "GPU_LOST",
            `${node.name} GPU ${gpu.index} (${gpu.lost?.pciBusId}) is lost: ${gpu.lost?.line}`,
          ));
      forEachInstance(gpu, (inst) => {
        // Its title names both things it checks: a STRESS_SHARE failure fails "its share".
        it("computes without errors for the whole duration, at its share of the GPU", async () => {
          const r = await stress.result(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("stress", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail("STRESS_FAILED", `${node.name} ${inst.label} (${inst.profile}): ${r.reason}`);
          const mine = perSm(r);
          // A whole GPU (MIG off) reports no SM count: it is its own share.
          if (mine === null) return check.note("no SM count: no share to compare");
          const others = await neighboursPerSm(inst, gpu.instances);
          if (others.length === 0) {
            check.figures({ perSm: round(mine) });
            check.note("the only instance measured on its GPU: no share to compare");
            return;
          }
          const med = median(others);
          const ratio = mine / med;
          const tol = run.options.tolerance;
          check.figures({
            perSm: round(mine),
            gpuMedianPerSm: round(med),
            ratio: round(ratio),
            expectedTflops: round(med * (inst.sm ?? 0), 2),
            tolerance: tol,
          });
          if (ratio < 1 - tol)
            fail(
              "STRESS_SHARE",
              `${node.name} ${inst.label} (${inst.profile}): ${mine.toFixed(4)} TFLOP/s per SM is ${((1 - ratio) * 100).toFixed(1)} % below the median ${med.toFixed(4)} of the GPU's other instances (tolerance ${(tol * 100).toFixed(1)} %)`,
            );
          check.note(`${(ratio * 100).toFixed(1)} % of the GPU's median TFLOP/s per SM`);
        });
      });
    });
  });
});

function round(x: number, digits = 4): number {
  const k = 10 ** digits;
  return Math.round(x * k) / k;
}
