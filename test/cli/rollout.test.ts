// slicecheck rollout on a real Slurm (munge, slurmctld, a slurmd per simulated node): four nodes
// one at a time, each drained, verified by the health suite, resumed only on pass. A planted
// uncorrectable ECC error on the second node stops the window there: the first node is back in
// service, the failed one stays drained with the check in its reason, the last two were never
// touched. Fixed and run again, the same command resumes from its state file: the passed node
// is not verified again, the rest are, and every node ends in service.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RolloutState } from "../../src/cli/commands/rollout-state.js";
import { cli } from "../helpers/cli.js";
import { slurmNodeOf, useSlurmCluster } from "../helpers/slurm-cluster.js";

describe("rollout (real Slurm 22.05, real sshd, simulated H100 x4)", function () {
  this.timeout(400_000);
  const c = useSlurmCluster(4);
  const stateFile = () => join(c.dir, "window.json");
  const state = () => JSON.parse(readFileSync(stateFile(), "utf8")) as RolloutState;
  const rollout = (...args: string[]) =>
    cli(
      "rollout",
      "-i",
      c.inventoryPath,
      "--suites",
      "health",
      "--duration",
      "1",
      "--db",
      join(c.dir, "r.db"),
      "--state",
      stateFile(),
      ...args,
    );
  const slurm = (name: string) => slurmNodeOf(c, name);

  it("stops at the planted failure: the passed node resumed, the failed one drained, the rest untouched", async () => {
    const f = await cli(
      "sim",
      "fault",
      "sim02",
      "ecc-uncorrectable",
      "--gpu",
      "0",
      "--name",
      "contained",
      "-i",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    const r = await rollout();
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^sim01: PASSED in \d+m\d\ds, driver \? -> 580\.65\.06$/m);
    assert.match(r.stdout, /^sim02: FAILED in .*: failed health: .*ECC/m);
    assert.match(r.stderr, /stopped after sim02 \(failed\); not started: sim03, sim04/);
    const s = state();
    assert.equal(s.status, "stopped");
    assert.deepEqual(
      s.nodes.map((n) => [n.name, n.state]),
      [
        ["sim01", "passed"],
        ["sim02", "failed"],
        ["sim03", "pending"],
        ["sim04", "pending"],
      ],
    );
    const [n1, n2, n3, n4] = await Promise.all(["sim01", "sim02", "sim03", "sim04"].map(slurm));
    assert.doesNotMatch(n1!.state, /DRAIN/, "sim01 passed: back in service");
    assert.match(n2!.state, /DRAIN/, "sim02 failed: left drained");
    assert.match(
      n2!.reason ?? "",
      new RegExp(`^slicecheck ${s.id} sc-\\S+: 1 check\\(s\\) failed: health: `),
    );
    for (const n of [n3!, n4!]) {
      assert.doesNotMatch(n.state, /DRAIN/, `${n.name} never drained`);
      assert.equal(n.reason ?? null, null);
    }
  });

  it("fixed and run again, resumes from its state file: sim01 is not run again, every node ends in service", async () => {
    const before = state();
    const f = await cli("sim", "fault", "sim02", "--clear", "-i", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    const r = await rollout();
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`rollout ${before.id}: resuming: 1 of 4 node\\(s\\) passed already`),
    );
    const s = state();
    assert.equal(s.status, "done");
    assert.equal(s.id, before.id);
    assert.deepEqual(
      s.nodes.map((n) => n.state),
      ["passed", "passed", "passed", "passed"],
    );
    assert.equal(s.nodes[0]!.runId, before.nodes[0]!.runId, "sim01 was not verified again");
    assert.notEqual(s.nodes[1]!.runId, before.nodes[1]!.runId, "sim02 was verified again");
    for (const name of ["sim01", "sim02", "sim03", "sim04"])
      assert.doesNotMatch((await slurm(name)).state, /DRAIN/, `${name} in service`);
    assert.match(r.stdout, /4 passed, 0 failed, 0 broken, 0 not started, of 4 node\(s\)/);
    assert.match(readFileSync(join(c.dir, s.id, "summary.md"), "utf8"), /sim04 +passed/);
  });

  it("--max-unavailable 2 verifies two nodes in one batch; an unfinished window refuses another plan (exit 3)", async () => {
    const f = await cli(
      "sim",
      "fault",
      "sim03",
      "ecc-uncorrectable",
      "--gpu",
      "0",
      "--name",
      "contained",
      "-i",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    const r = await rollout("--nodes", "sim03,sim04", "--max-unavailable", "2");
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const s = state();
    assert.equal(s.nodes[0]!.runId, s.nodes[1]!.runId, "one run for the batch of two");
    assert.deepEqual(
      s.nodes.map((n) => n.state),
      ["failed", "passed"],
    );
    assert.match((await slurm("sim03")).state, /DRAIN/);
    assert.doesNotMatch((await slurm("sim04")).state, /DRAIN/);
    const other = await rollout();
    assert.equal(other.code, 3, other.stdout + other.stderr);
    assert.match(other.stderr, /holds unfinished rollout ro-\S+ of other nodes or options/);
    assert.equal(
      (await rollout("--nodes", "sim03,sim04", "--max-unavailable", "2", "--list")).code,
      3,
    );
    assert.equal((await rollout("--drain")).code, 3);
  });
});
