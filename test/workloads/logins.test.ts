// One login per node per phase (issue 25): a stress on 7 MIG instances opens as many SSH
// sessions as a stress on 1 (one: the node's supervisor), counted from sshd's own log
// (LogLevel VERBOSE writes one `Starting session: command` line per channel). With a channel
// per workload the 7-instance phase would open 7. The launcher is driven directly: a whole
// `run` also samples utilization on whatever channel is free, which varies with timing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import { discoverInstances } from "../../src/workloads/instances.js";
import { runOnInstances } from "../../src/workloads/launcher.js";
import { stressSpec } from "../../src/workloads/specs.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
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

  /** The sessions one stress phase opens on the node, and how many of its workloads passed. */
  async function stressPhase(config: string): Promise<{ sessions: number; ok: number }> {
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
      const outcomes = await runOnInstances([t], instances, spec, { outDir: out });
      return {
        sessions: sessions() - before,
        ok: outcomes.filter((o) => o.exitCode === 0 && o.incomplete === null).length,
      };
    } finally {
      await t.close();
    }
  }

  it("a 7-instance stress phase costs the node one login, as a 1-instance one does", async () => {
    const seven = await stressPhase("all-1g.10gb");
    const one = await stressPhase("all-7g.80gb");
    assert.deepEqual([seven.ok, one.ok], [7, 1]);
    assert.deepEqual([seven.sessions, one.sessions], [1, 1]);
  });
});
