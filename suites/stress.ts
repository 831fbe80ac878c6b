// stress: every MIG instance (or whole GPU) of every node computes without errors for the
// whole duration. The workload starts on all instances of all nodes at once (that is what a
// partitioned GPU is for); each instance's test then judges its own result, and its Allure
// duration is the span its workload really ran.
import { current, fail, forEachGpu, forEachInstance, forEachNode, harness } from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";

const run = harness();
const stress = run.workload("stress");

describe("stress", () => {
  before(() => stress.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance to stress", () =>
        brokenIf(node.error ?? `${node.name}: no MIG instance and no GPU without MIG`));
    forEachGpu(node, (gpu) => {
      forEachInstance(gpu, (inst) => {
        it("computes without errors for the whole duration", async () => {
          const r = await stress.result(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("stress", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail("STRESS_FAILED", `${node.name} ${inst.label} (${inst.profile}): ${r.reason}`);
        });
      });
    });
  });
});
