// The launcher never passes a workload that did not run its whole duration: one stopped by a
// signal on the node (the simulated stress, over real sshd), and one whose figures stop early
// although it exited 0. A full run passes, so the check is not simply "always broken".
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { NodeSpec } from "../../src/inventory/types.js";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import { incompleteReason } from "../../src/workloads/completion.js";
import { discoverInstances } from "../../src/workloads/instances.js";
import { runOnInstances } from "../../src/workloads/launcher.js";
import { stressSpec, type WorkloadSpec } from "../../src/workloads/specs.js";
import { statusOf, summarize } from "../../src/workloads/summary.js";
import { taggedPids, useCluster, waitFor } from "../helpers/cluster.js";
import { isSimWorkload } from "../helpers/sim-procs.js";
import { tempDir } from "../helpers/tmp.js";

describe("launcher: a workload cut short is never a pass (simulated stress, real sshd)", function () {
  this.timeout(90_000);
  const c = useCluster(1);
  const out = tempDir("launcher");
  let node: NodeSpec;
  let t: SshTransport;
  let run: string;

  before(async () => {
    node = c.inventory.nodes[0]!;
    run = newRunId();
    t = new SshTransport(node, { runId: run });
    await t.connect();
  });
  after(async () => {
    await t?.close();
  });

  it("a full run passes; one stopped by SIGTERM on the node fails, with the reason", async () => {
    const { instances } = await discoverInstances(t);
    assert.equal(instances.length, 1);
    const spec = { ...stressSpec(2, 0.5), program: "slicecheck-stress" };
    const [full] = await runOnInstances([t], instances, spec, { outDir: out });
    assert.deepEqual([full!.exitCode, full!.incomplete, statusOf(full!)], [0, null, "passed"]);

    const long = { ...stressSpec(30, 0.5), program: "slicecheck-stress" };
    const running = runOnInstances([t], instances, long, {
      outDir: out,
      repetition: 2,
      onLine: () => {},
    });
    // The workload is a process on this machine tagged with its run: find it by its program.
    const tag = `SLICECHECK_RUN=${runTagFor(run, node.name)}`;
    const stressPid = () => taggedPids(tag).find((p) => isSimWorkload(p, "stress"));
    assert.ok(await waitFor(() => stressPid() !== undefined, 15_000), "the stress started");
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(stressPid()!, "SIGTERM");
    const [cut] = await running;
    assert.equal(cut!.exitCode, 143, cut!.stdout);
    assert.match(cut!.incomplete ?? "", /^stopped by SIGTERM after \d+\.\d s of 30 s$/);
    assert.equal(statusOf(cut!), "failed");
    const row = summarize(run, [
      {
        node: node.name,
        inventory: null,
        error: null,
        suites: [{ suite: "stress", skipped: null, outcomes: [cut!] }],
      },
    ]).rows[0]!;
    assert.match(row.note ?? "", /^stopped by SIGTERM after .* of 30 s \(exit 143\)$/);
    assert.ok(cut!.measurements.length > 0, "what it measured is still reported");
    assert.match(cut!.stdout.trimEnd().split("\n").at(-1)!, /^SLICECHECK stopped program=stress/);
  });

  it("a stress that exits 0 with figures spanning 1 s of 10 is broken, not passed", async () => {
    const { instances } = await discoverInstances(t);
    // What an old binary (exit 0 on SIGTERM) or a wrapper that swallows the signal prints.
    const fake: WorkloadSpec = {
      name: "stress",
      program: "sh",
      args: [
        "-c",
        "echo 'SLICECHECK stress t=0.5 tflops=5.00 errors=0'; echo 'SLICECHECK stress t=1.0 tflops=5.00 errors=0'; echo 'SLICECHECK stress-final tflops=5.00 errors=0 iterations=40'",
      ],
      durationS: 10,
    };
    const [o] = await runOnInstances([t], instances, fake, { outDir: out, repetition: 3 });
    assert.equal(o!.exitCode, 0);
    assert.equal(o!.incomplete, "its figures span 1.0 s of 10 s");
    assert.equal(statusOf(o!), "broken");
  });

  it("judges the time span and the final line from the output alone", () => {
    const spec = stressSpec(10, 2);
    const line = (t: number) => `SLICECHECK stress t=${t.toFixed(1)} tflops=5.00 errors=0`;
    const final = "SLICECHECK stress-final tflops=5.00 errors=0 iterations=400";
    const r = (stdout: string, exitCode: number | null = 0, signal: string | null = null) =>
      incompleteReason(spec, { exitCode, signal, timedOut: false, stdout });
    assert.equal(r([2, 4, 6, 8, 10].map(line).concat(final).join("\n")), null);
    assert.equal(r([2, 4, 6, 8].map(line).concat(final).join("\n")), null, "one interval early");
    assert.equal(r([2, 4].map(line).concat(final).join("\n")), "its figures span 4.0 s of 10 s");
    assert.equal(r([2, 4, 6, 8, 10].map(line).join("\n")), "ended without its final line");
    assert.equal(r("", null, "SIGKILL"), "killed by SIGKILL before its end");
    assert.equal(
      r([2, 4, 6, 8, 10].map(line).concat(final).join("\n"), 137),
      "killed by SIGKILL before its end",
    );
  });
});
