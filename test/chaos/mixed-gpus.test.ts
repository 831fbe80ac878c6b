// A node whose first GPU is one whole-card instance and whose second is split in two: the second
// GPU's fault scenarios are its own (their keys and aggressor name GPU 1's instance), not the
// whole-card entry's that comes before them in the plan. Real sshd, simulated H100 x2.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IsolationSummary } from "../../src/chaos/isolation.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

describe("isolation on a node with a whole-card GPU before a split one (real sshd)", function () {
  this.timeout(180_000);
  let c: TestCluster;

  before(async () => {
    c = await startCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
  });
  after(async () => {
    await c?.stop();
  });

  it("judges GPU 1's crash with GPU 1's aggressor, and GPU 0's exclusivity apart", async () => {
    const out = join(c.dir, "run");
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--layout",
      "test/fixtures/isolation-layout.yaml",
      "-c",
      "whole-then-halves",
      "--suites",
      "isolation",
      "--faults",
      "crash",
      "--aggressors",
      "1",
      "--duration",
      "1.5",
      "--out",
      out,
      "--journal-dir",
      join(c.dir, "journal"),
    );
    const s = JSON.parse(readFileSync(join(out, "verdicts.json"), "utf8")) as IsolationSummary;
    assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(s.rows, null, 1)}`);
    const crash = s.rows.filter((x) => x.fault === "crash");
    assert.ok(crash.length >= 4, JSON.stringify(s.rows));
    for (const x of crash) {
      assert.equal(x.gpu, 1, `${x.verdict}: ${x.aggressor}`);
      assert.match(x.aggressor, /^gpu1\//, `${x.verdict} names its aggressor ${x.aggressor}`);
      assert.equal(x.status, "passed", x.summary);
    }
    const ex = s.rows.find((x) => x.verdict === "exclusive");
    assert.equal(ex?.gpu, 0, JSON.stringify(ex));
    assert.equal(ex?.status, "passed", ex?.summary);
  });
});
