// The node lease (real sshd, 2 simulated H100 nodes): a stall of the controller's connection
// does not hand a node to another controller while the run may still act on it, and a run
// whose lease did run out never undoes the layout another controller put there since.
// The issue 26 reproduction: `run --layout default.yaml -c all-balanced`, 3 s into the stress
// one node's sshd sessions stopped for 25 s, a second `apply -c all-1g.10gb` at +17 s.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readState } from "../../sim/src/nvsmi/state.js";
import { readPid } from "../../sim/src/sshd.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { type CliRun, cli } from "../helpers/cli.js";
import { taggedPids, useCluster, waitFor } from "../helpers/cluster.js";
import { childrenOf } from "../helpers/procs.js";

const LAYOUT = "fixtures/layouts/default.yaml";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RunJson {
  runId: string;
  exitCode: number;
  checks: CheckRecord[];
}

describe("the node lease (real sshd, 2 simulated H100)", function () {
  // Generous: on a loaded machine the run's apply and build alone take minutes.
  this.timeout(420_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }, {}]);
  const state = (node: string) => join(simNodeRecord(c.inventoryPath, node).dir, "state");
  const gpu = (node: string) => readState(state(node)).gpus[0]!;
  const profiles = (node: string) =>
    gpu(node)
      .gis.map((g) => g.profileId)
      .sort((a, b) => a - b);

  /** Starts the issue's run; once its stress runs on sim01, +3 s, stops sim01's sessions. */
  async function stalledRun(name: string, extra: string[]) {
    const out = join(c.dir, name);
    const running = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--duration",
      "20",
      "--layout",
      LAYOUT,
      "-c",
      "all-balanced",
      "--allow-reset",
      "--out",
      out,
      "--db",
      join(c.dir, `${name}.db`),
      "--journal-dir",
      join(c.dir, `${name}-journal`),
      "--json",
      ...extra,
    );
    const started = await waitFor(() => {
      try {
        return readdirSync(join(out, "sim01")).length > 0;
      } catch {
        return false;
      }
    }, 180_000);
    assert.ok(started, "the stress never started on sim01");
    await sleep(3_000);
    const listener = readPid(join(simNodeRecord(c.inventoryPath, "sim01").dir, "sshd.pid"))!;
    const frozen = childrenOf(listener);
    assert.ok(frozen.length > 0, "sim01 has a session to stop");
    const balanced = profiles("sim01");
    assert.ok(balanced.length > 1, "the run's layout is in place");
    for (const p of frozen) process.kill(p, "SIGSTOP");
    // The second controller starts at +17 s; the stall lasts 25 s whatever it is doing then.
    // sim01's layout is read as soon as the second apply has answered.
    let second: Promise<{ r: CliRun; layout: number[] }> | null = null;
    try {
      await sleep(17_000);
      second = secondApply(`${name}-second-journal`).then((r) => ({
        r,
        layout: profiles("sim01"),
      }));
      await sleep(8_000);
    } finally {
      for (const p of frozen) process.kill(p, "SIGCONT");
    }
    const after = await second;
    return { running, balanced, second: after.r, layoutAfterSecond: after.layout };
  }

  const secondApply = (journal: string) =>
    cli(
      "apply",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      LAYOUT,
      "-c",
      "all-1g.10gb",
      "--journal-dir",
      join(c.dir, journal),
      "--json",
    );

  it("a 25 s stall (default 45 s lease): a second apply at +17 s is refused, naming the holder and its expiry; the run then restores its own layout", async () => {
    const s = await stalledRun("held", []);
    const { second, layoutAfterSecond: heldLayout } = s;
    const r = await s.running;
    const run = JSON.parse(r.stdout) as RunJson;
    // Refused, nothing touched, exit 2 ("could not check"), with who holds it until when.
    assert.equal(second.code, 2, second.stdout + second.stderr);
    const node = (
      JSON.parse(second.stdout) as { nodes: { error: { code: string; message: string } }[] }
    ).nodes[0]!;
    assert.equal(node.error.code, "NODE_LOCKED");
    assert.match(
      node.error.message,
      new RegExp(
        `the node is locked by run ${run.runId} \\(\`slicecheck .*\\); its lease \\(generation \\d+\\) runs until \\S+Z by the node's clock \\(in \\d+ s\\)`,
      ),
    );
    // Nothing was touched: the run's layout is still there.
    assert.deepEqual(heldLayout, s.balanced);
    // The stall disturbed the stress on sim01 (broken, never failed); the run kept its lease,
    // so it put back what it found (MIG off) on both nodes, and said nothing of a lost lease.
    const sim01 = run.checks.filter((x) => x.node === "sim01" && x.suite === "stress");
    assert.ok(sim01.length > 0 && sim01.every((x) => x.status === "broken"), JSON.stringify(sim01));
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stderr, /LEASE_LOST/);
    for (const n of ["sim01", "sim02"]) {
      assert.equal(gpu(n).mig.current, false, `${n}: restored to MIG off`);
      assert.equal(gpu(n).gis.length, 0);
    }
  });

  it("a 25 s stall with a 10 s lease: the lease runs out, a second apply takes the node, and the run's restore refuses, leaving that apply's layout", async () => {
    const s = await stalledRun("lost", ["--lease", "10"]);
    const { second, layoutAfterSecond: taken } = s;
    const r = await s.running;
    const run = JSON.parse(r.stdout) as RunJson;
    // The node was free: its lease had run out 10 s into the stall (expired, and fenced).
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.deepEqual(taken, [19, 19, 19, 19, 19, 19, 19], "the second apply changed the GPU");
    // The first run re-validated its lease before its restore, found it lost, and said so.
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      /sim01: restore refused: sim01: this run's lease on the node was lost \(generation \d+ expired on the node: no heartbeat reached it for 10 s\); slicecheck changes nothing more on it/,
    );
    const lost = run.checks.find((x) => x.title === "restore the original MIG layout");
    assert.equal(
      lost?.status,
      "broken",
      JSON.stringify(run.checks.filter((x) => x.suite === "run")),
    );
    assert.equal(lost?.code, "LEASE_LOST");
    // Its checks on sim01 are broken, never passed or failed.
    const sim01 = run.checks.filter((x) => x.node === "sim01" && x.suite === "stress");
    assert.ok(sim01.length > 0 && sim01.every((x) => x.status === "broken"), JSON.stringify(sim01));
    // sim01 keeps the second apply's layout; sim02, still the run's, is restored.
    assert.deepEqual(profiles("sim01"), [19, 19, 19, 19, 19, 19, 19]);
    const asserted = await cli(
      "assert",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      LAYOUT,
      "-c",
      "all-1g.10gb",
    );
    assert.equal(asserted.code, 0, asserted.stdout);
    assert.equal(gpu("sim02").mig.current, false);
    // The second apply's own restore finds the original state (the first journal, kept).
    const back = await cli(
      "restore",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      "--journal-dir",
      join(c.dir, "lost-second-journal"),
    );
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.equal(gpu("sim01").mig.current, false);
  });

  it("a lease whose holder was killed: refused until it expires, then taken over and the dead run's processes fenced", async () => {
    const info = {
      runId: "sc-20261203T000000Z-dead00",
      command: "apply x.yaml -c all-1g.10gb",
      controller: "ci-runner-7",
      pid: 4242,
      started: "2026-12-03T00:00:00.000Z",
      leaseS: 45,
    };
    const tag = `${info.runId}@sim01`;
    const now = Math.floor(Date.now() / 1000);
    writeFileSync(join(state("sim01"), "node.lock.json"), `${JSON.stringify(info)}\n`);
    writeFileSync(join(state("sim01"), "node.lease"), `41 ${now + 120} held ${tag}\n`);
    const refused = await cli("restore", "-i", c.inventoryPath, "--nodes", "sim01", "--json");
    assert.equal(refused.code, 2, refused.stdout);
    assert.match(
      refused.stdout,
      /the node's lease is held by run sc-20261203T000000Z-dead00 \(`slicecheck apply x\.yaml -c all-1g\.10gb` from ci-runner-7, pid 4242, since 2026-12-03T00:00:00\.000Z\), whose holder on the node is gone but whose controller may still be working; its lease \(generation 41\) runs until \S+Z by the node's clock \(in 1[12]\d s\)/,
    );
    // A process of the dead run still on the node, and its lease now past expiry.
    let stray: ChildProcess | null = spawn("sleep", ["300"], {
      env: { ...process.env, SLICECHECK_RUN: tag },
      stdio: "ignore",
    });
    try {
      assert.ok(await waitFor(() => taggedPids(`SLICECHECK_RUN=${tag}`).length === 1, 5_000));
      writeFileSync(join(state("sim01"), "node.lease"), `41 ${now - 1} held ${tag}\n`);
      const r = await cli("restore", "-i", c.inventoryPath, "--nodes", "sim01");
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /sim01: no journal: nothing to restore/);
      assert.ok(
        await waitFor(() => taggedPids(`SLICECHECK_RUN=${tag}`).length === 0, 5_000),
        "the dead run's process was fenced",
      );
      stray = null;
      // The next generation, released by restore when it finished.
      const lease = readFileSync(join(state("sim01"), "node.lease"), "utf8").split(" ");
      assert.deepEqual([lease[0], lease[2]], ["42", "released"]);
    } finally {
      stray?.kill("SIGKILL");
    }
  });
});
