// serving: every MIG instance (or whole GPU) answers a stream of small batched GEMM requests
// (workloads/serve.cu) with every answer right for the whole duration, and reports its request
// latency (p50, p99) and rate (requests/s). The workload starts on all instances of all nodes at
// once, as stress does, so each instance's figures are taken beside its busy neighbours: on MIG
// they must not matter. The figures are measurements (`slicecheck diff` compares them between
// runs); what latency is acceptable is the operator's SLO, not a property of the partition, so
// this suite fails only on wrong answers, a CUDA error or a run that did not complete. Latency
// isolation under faults is the isolation suite's "victims' latency unaffected" verdict.
import { current, fail, forEachGpu, forEachInstance, forEachNode, harness } from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  runsWorkloads: true,
  labels: { epic: "MIG partition validation", feature: "Serving" },
});
const serve = run.workload("serve");

describe("serving", () => {
  before(() => serve.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance to serve on", () =>
        brokenIf(node.error ?? `${node.name}: no MIG instance and no GPU without MIG`));
    forEachGpu(node, (gpu) => {
      if (gpu.lost)
        it("is on the bus", () =>
          fail(
            "GPU_LOST",
            `${node.name} GPU ${gpu.index} (${gpu.lost?.pciBusId}) is lost: ${gpu.lost?.line}`,
          ));
      forEachInstance(gpu, (inst) => {
        it("serves requests with right answers for the whole duration (p50, p99, requests/s)", async () => {
          const r = await serve.result(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("serve", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail("SERVE_FAILED", `${node.name} ${inst.label} (${inst.profile}): ${r.reason}`);
          const { p50_ms: p50, p99_ms: p99, rps } = r.metrics;
          if (p50 === undefined || p99 === undefined || rps === undefined)
            return brokenIf(
              `${node.name} ${inst.label}: serve reported no latency figures`,
              "WORKLOAD_UNDECIDED",
            );
          check.note(
            `p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms, ${rps.toFixed(0)} requests/s`,
          );
        });
      });
    });
  });
});
