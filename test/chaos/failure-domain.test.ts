// A whole-GPU fault during `run --suites isolation,health --faults kill`: the GPU falls off the
// bus mid-run (sim fault gpu-lost). Kill logs no Xid, so nothing the isolation suite injected
// explains the Xid 79: health fails on it, and reports the GPU as one failure domain that took
// every instance on it, while the GPU still on the bus passes.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { plantFault } from "../../sim/src/faults.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster, waitFor } from "../helpers/cluster.js";

describe("failure domains (run --suites isolation,health, real sshd, simulated H100 x2)", function () {
  this.timeout(120_000);
  let c: TestCluster;

  before(async () => {
    c = await startCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
    const r = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      "test/fixtures/isolation-layout.yaml",
      "-c",
      "two-3g",
      "--journal-dir",
      join(c.dir, "journal"),
    );
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    await c?.stop();
  });

  it("gpu-lost mid-run: health fails on the Xid 79 and names GPU 1 as one failure domain", async () => {
    const out = join(c.dir, "run");
    const history = join(out, "history.jsonl");
    const running = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "isolation,health",
      "--faults",
      "kill",
      "--aggressors",
      "1",
      "--duration",
      "1",
      "--out",
      out,
      "--json",
    );
    // Once GPU 1's aggressor is being killed, the GPU falls off the bus.
    const onGpu1 = () =>
      existsSync(history) &&
      readFileSync(history, "utf8")
        .split("\n")
        .some((l) => l.includes('"gpu":1') && l.includes('"op":"fault"'));
    assert.ok(await waitFor(onGpu1, 90_000), "GPU 1's fault never started");
    await plantFault(join(c.dir, ".sim.d/nodes/sim01/state"), "gpu-lost", { gpu: 1 });
    const r = await running;
    assert.equal(r.code, 1, r.stderr);
    const checks = (JSON.parse(r.stdout) as { checks: CheckRecord[] }).checks;
    const health = checks.filter((x) => x.suite === "health");
    const by = (gpu: number, t: string) => {
      const x = health.find((h) => h.gpu === gpu && h.title === t);
      assert.ok(x, `${t} on GPU ${gpu}: ${health.map((h) => `${h.gpu} ${h.title}`).join("; ")}`);
      return x;
    };
    const domain = by(1, "failure domain");
    assert.equal(domain.status, "failed", domain.message);
    assert.match(domain.message, /GPU 1 .* is lost: every instance on it is lost with it \(2: /);
    assert.match(domain.message, /runtime isolation, not redundancy/);
    const xid = by(1, "logged no new Xid");
    assert.equal(xid.status, "failed", xid.message);
    assert.match(xid.message, /critical Xid 79/);
    assert.equal(by(0, "failure domain").status, "passed");
    assert.equal(by(0, "logged no new Xid").status, "passed", by(0, "logged no new Xid").message);
    assert.equal(
      health.filter((h) => h.status === "failed" && h.title === "failure domain").length,
      1,
      "one failure domain, not one failure per instance",
    );
  });
});
