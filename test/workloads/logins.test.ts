// One login per node per phase (issue 25): a stress on 7 MIG instances, its utilization sampler
// included, opens as many SSH sessions as a stress on 1 (one: the node's supervisor, which runs
// the workloads and the sampler's looping command), counted from sshd's own log (LogLevel
// VERBOSE writes one `Starting session: command` line per channel). With a channel per workload
// the 7-instance phase would open 7, and a sampler with a command per tick one more per tick.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import { discoverInstances } from "../../src/workloads/instances.js";
import { runOnInstances } from "../../src/workloads/launcher.js";
import { stressSpec } from "../../src/workloads/specs.js";
import { withUtilization } from "../../src/workloads/utilization.js";
import { cli } from "../helpers/cli.js";
import { taggedPids, useCluster, waitFor } from "../helpers/cluster.js";
import { tempDir } from "../helpers/tmp.js";

describe("one login per node per phase (node supervisor, real sshd)", function () {
  this.timeout(120_000);
  const c = useCluster([{ gpu: "H100-80GB" }]);
  const out = tempDir("logins");

  /** Session channels the node's sshd has opened so far. */
  const sessions = () =>
    readFileSync(join(c.dir, ".sim.d", "nodes", "sim01", "sshd.log"), "utf8")
      .split("\n")
      .filter((l) => l.includes("Starting session: command")).length;

  /** The sessions one stress phase opens on the node (sampled as a run samples it), how many of
   * its workloads passed, and the fewest utilization samples an instance got. */
  async function stressPhase(
    config: string,
  ): Promise<{ sessions: number; ok: number; samples: number }> {
    const a = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      "fixtures/layouts/default.yaml",
      "-c",
      config,
    );
    assert.equal(a.code, 0, a.stderr);
    const t = new SshTransport(c.inventory.nodes[0]!, { runId: newRunId() });
    try {
      const { instances } = await discoverInstances(t);
      const before = sessions();
      const spec = { ...stressSpec(3, 0.5), program: "slicecheck-stress" };
      const { result, util } = await withUtilization(
        t,
        instances,
        { sample: true, durationS: 3 },
        async (shared) => ({
          outcomes: await runOnInstances([t], instances, spec, { outDir: out, ...shared }),
        }),
      );
      const outcomes = result.outcomes;
      return {
        sessions: sessions() - before,
        ok: outcomes.filter((o) => o.exitCode === 0 && o.incomplete === null).length,
        samples: Math.min(...instances.map((i) => util?.samples.get(i.uuid)?.length ?? 0)),
      };
    } finally {
      await t.close();
    }
  }

  it("a 7-instance stress phase, sampled, costs the node one login, as a 1-instance one does", async () => {
    const seven = await stressPhase("all-1g.10gb");
    const one = await stressPhase("all-7g.80gb");
    assert.deepEqual([seven.ok, one.ok], [7, 1]);
    // Every instance was sampled (a reading every 0.5 s of a 3-s phase), through that login.
    assert.ok(seven.samples >= 1 && one.samples >= 1, JSON.stringify([seven, one]));
    assert.deepEqual([seven.sessions, one.sessions], [1, 1]);
  });

  it("a whole stress run costs the node 3 logins: lock, discovery (catalogue and build check in its call), supervisor", async () => {
    const layout = ["fixtures/layouts/default.yaml", "-c", "all-1g.10gb"];
    const a = await cli("apply", "-i", c.inventoryPath, ...layout);
    assert.equal(a.code, 0, a.stderr);
    const before = sessions();
    const r = await cli(
      ...["run", "-i", c.inventoryPath, "--suites", "stress", "--duration", "1"],
      ...["--out", join(out, "run"), "--db", join(out, "run.db"), "--json"],
    );
    assert.equal(r.code, 0, r.stderr);
    assert.ok(JSON.parse(r.stdout).checks.some((x: { suite: string }) => x.suite === "stress"));
    // The lock's holder (its release too); discovery, whose call also reads the records'
    // catalogue (-lgip, -lgipp) and makes the built-in workloads' check, where each was a login
    // of its own; the stress phase's supervisor (its workloads and sampler).
    assert.equal(sessions() - before, 3);
  });

  it("`slicecheck cleanup --run` kills the supervisor and everything it started", async () => {
    const node = c.inventory.nodes[0]!;
    const run = newRunId();
    const t = new SshTransport(node, { runId: run });
    const tagged = () => taggedPids(`SLICECHECK_RUN=${runTagFor(run, node.name)}`);
    try {
      const s = await t.supervise();
      assert.equal(s.fallback, null);
      const pending = s.exec({ shell: "sleep 300" }, { timeoutMs: 600_000 });
      pending.catch(() => {});
      const cmdlines = () =>
        tagged().map((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, "latin1").split("\0").join(" ");
          } catch {
            return "";
          }
        });
      assert.ok(
        await waitFor(() => cmdlines().includes("sleep 300 "), 15_000),
        "the workload runs under the supervisor",
      );
      // The supervisor itself carries the run's tag: cleanup finds it too (perl's, this
      // machine having perl; the shell's where a node has none).
      assert.ok(
        cmdlines().some((l) => /^perl -e use strict;|^(\/bin\/bash|sh) -c hb=\$1;/.test(l)),
        cmdlines().join("\n"),
      );
      const r = await cli("cleanup", "-i", c.inventoryPath, "--run", run, "--json");
      assert.equal(r.code, 0, r.stderr);
      assert.ok(JSON.parse(r.stdout).nodes[0].killed >= 2, r.stdout);
      assert.ok(await waitFor(() => tagged().length === 0, 15_000), `left: ${tagged()}`);
      // The command's caller hears of it (its end, or its supervisor's), never waits forever.
      await Promise.race([
        pending.catch(() => null),
        sleep(15_000).then(() => assert.fail("hung")),
      ]);
    } finally {
      await t.close();
    }
  });
});
