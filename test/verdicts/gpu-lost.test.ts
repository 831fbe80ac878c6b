// A GPU that fell off the bus before the run (`sim fault NODE gpu-lost --gpu 0`) is a definite
// health failure of that GPU, not a node the harness "could not check": `run --suites health` on
// a 2-GPU node fails GPU 0 with code GPU_LOST, its bus id and the driver's words, and still tests
// GPU 1 (which passes). With the fault cleared, the same run passes.
import assert from "node:assert/strict";
import { join } from "node:path";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

describe("a GPU lost before the run (run --suites health, real sshd, simulated H100 x2)", function () {
  this.timeout(120_000);
  let c: TestCluster;
  const state = () => join(c.dir, ".sim.d/nodes/sim01/state");
  const health = async (tag: string) => {
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "health",
      "--out",
      join(c.dir, tag),
      "--json",
    );
    const checks = (JSON.parse(r.stdout) as { checks: CheckRecord[] }).checks;
    return { r, checks };
  };

  before(async () => {
    c = await startCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
  });
  after(async () => {
    await c?.stop();
  });

  it("fails GPU 0 GPU_LOST with its bus id and the driver's words; GPU 1 is tested and passes", async () => {
    await plantFault(state(), "gpu-lost", { gpu: 0 });
    const { r, checks } = await health("lost");
    assert.equal(
      r.code,
      1,
      `${r.stderr}\n${checks.map((x) => `${x.gpu} ${x.title} ${x.status} ${x.code}`).join("\n")}`,
    );
    assert.ok(!checks.some((x) => x.code === "TOOL_MISSING"), "the node is not 'could not check'");
    const g0 = checks.filter((x) => x.gpu === 0);
    const answers = g0.find((x) => x.title.endsWith("driver answers"));
    assert.ok(answers, checks.map((x) => `${x.gpu} ${x.title}`).join("; "));
    assert.equal(answers.status, "failed");
    assert.equal(answers.code, "GPU_LOST");
    assert.match(answers.message, /GPU 0 \(0000:07:00\) is lost/);
    assert.match(answers.message, /GPU is lost\.\s+Reboot the system to recover this GPU/);
    const domain = g0.find((x) => x.title.endsWith("failure domain"));
    assert.equal(domain?.status, "failed");
    assert.equal(domain?.code, "GPU_LOST");
    const g1 = checks.filter((x) => x.gpu === 1);
    assert.equal(g1.length, 5, g1.map((x) => x.title).join("; "));
    for (const x of g1) assert.equal(x.status, "passed", `${x.title}: ${x.message}`);
  });

  it("passes on both GPUs once the fault is cleared", async () => {
    await clearFaults(state());
    const { r, checks } = await health("cleared");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(checks.filter((x) => x.status === "passed").length, 10);
  });
});
