// An example of a site's own suite: `slicecheck run --suites stress,suites/examples/site-checks.mjs`.
// An ordinary mocha file: `describe` and `it` as usual, the run's nodes from `harness()`, and
// `current()` to put figures and evidence on the check the running test makes.
//
// Checks:
//   - per node: the driver is at least SITE_MIN_DRIVER (default 535), the site's floor;
//   - per MIG instance: it has the memory its profile promises (a 3g.40gb has about 40 GB);
//   - per node: a 5 s stress on its first instance reaches SITE_MIN_TFLOPS_PER_SM (default
//     0.05) TFLOP/s per SM, recorded as a measurement so that `slicecheck diff` compares it.
import assert from "node:assert/strict";
import { current, fail, forEachGpu, forEachInstance, forEachNode, harness } from "slicecheck/suite";

const run = harness();
const minDriver = Number(process.env.SITE_MIN_DRIVER ?? 535);
const minPerSm = Number(process.env.SITE_MIN_TFLOPS_PER_SM ?? 0.05);
const firsts = run.nodes.map((n) => n.instances[0]).filter(Boolean);
const probe = run.workload("stress", { durationS: 5, instances: firsts });

describe("site checks", () => {
  before(() => probe.start());

  forEachNode(run.nodes, (node) => {
    it(`runs driver ${minDriver} or newer`, async () => {
      const r = await node.exec([
        "nvidia-smi",
        "--query-gpu=driver_version",
        "--format=csv,noheader",
      ]);
      assert.equal(r.exitCode, 0, `nvidia-smi failed: ${r.stderr}`);
      const version = r.stdout.trim().split("\n")[0] ?? "";
      current().figures({ driver: version });
      if (Number(version.split(".")[0]) < minDriver)
        fail("SITE_DRIVER", `${node.name} runs driver ${version}, older than ${minDriver}`);
    });

    if (node.instances.length > 0)
      it(`reaches ${minPerSm} TFLOP/s per SM on its first instance`, async () => {
        const r = await probe.result(node.instances[0]);
        const check = current();
        check.window(r.startMs, r.stopMs);
        check.evidenceFile("workload log", r.log);
        assert.equal(r.status, "passed", r.reason ?? "");
        const perSm = r.metrics.tflops / (r.instance.sm ?? 1);
        check.figures({ tflops: r.metrics.tflops, sm: r.instance.sm, perSm });
        check.measure(r.instance, "tflops-per-sm", perSm, "TFLOP/s");
        if (perSm < minPerSm)
          fail(
            "SITE_THROUGHPUT",
            `${r.instance.label}: ${perSm.toFixed(3)} TFLOP/s per SM < ${minPerSm}`,
          );
      });

    forEachGpu(node, (gpu) => {
      forEachInstance(gpu, (inst) => {
        const promisedGb = Number(/(\d+)gb$/.exec(inst.profile)?.[1] ?? Number.NaN);
        if (Number.isNaN(promisedGb)) return;
        it("has the memory its profile promises", () => {
          current().figures({ memoryMiB: inst.memoryMiB, promisedGB: promisedGb });
          // Profiles round down (a 1g.10gb has 9.75 GiB): 5 % below the name is still fine.
          if (inst.memoryMiB !== null && inst.memoryMiB < promisedGb * 953.7 * 0.95)
            fail("SITE_MEMORY", `${inst.label}: ${inst.memoryMiB} MiB for a ${inst.profile}`);
        });
      });
    });
  });
});
