// nccl: nccl-tests' all_reduce_perf with one rank inside each MIG instance completes without
// wrong results. (NCCL across instances of one GPU is unsupported or slow; that attempt is a
// documented expectation, not this suite's check.)
import { current, fail, forEachGpu, forEachInstance, forEachNode, harness } from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";

const run = harness();
const nccl = run.workload("nccl");

describe("nccl", () => {
  before(() => nccl.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance to run nccl-tests on", () =>
        brokenIf(node.error ?? `${node.name}: no instance`));
    forEachGpu(node, (gpu) => {
      forEachInstance(gpu, (inst) => {
        it("all_reduce_perf completes without wrong results", async () => {
          const r = await nccl.result(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("all_reduce_perf", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail("NCCL_FAILED", `${node.name} ${inst.label} (${inst.profile}): ${r.reason}`);
        });
      });
    });
  });
});
