// Soft partitioning under the isolation suite: two processes on one GPU without MIG, first
// time-sliced, then under MPS. The suite reports what it measures: time-slicing halves a noisy
// neighbour's victim and keeps a crash's error to the crasher; MPS propagates the crash.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { IsolationSummary } from "../../src/chaos/isolation.js";
import { cli } from "../helpers/cli.js";
import { taggedPids, useCluster } from "../helpers/cluster.js";

describe("isolation scenarios on soft partitioning (time-slicing and MPS, MIG off, real sshd)", function () {
  this.timeout(90_000);
  const c = useCluster([{ gpu: "A100-80GB", driver: "535.183.01" }]);

  it("measures the slowdown and the propagation, fails the isolation verdicts and says so", async () => {
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "isolation",
      "--faults",
      "noisy,crash",
      "--duration",
      "1.5",
      "--out",
      join(c.dir, "soft"),
    );
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /soft partitioning, not isolation/);
    const s = (await import("node:fs")).readFileSync(join(c.dir, "soft", "verdicts.json"), "utf8");
    const v = JSON.parse(s) as IsolationSummary;
    const get = (mode: string, fault: string) =>
      v.rows.find(
        (x) => x.mode === mode && x.fault === fault && x.verdict === "victimsUnaffected",
      )!;
    const noisy = get("time-slicing", "noisy");
    assert.equal(noisy.status, "failed");
    const slowdown = noisy.evidence.figures["gpu0/ts-b slowdown"] as number;
    assert.ok(slowdown > 1.6 && slowdown < 2.4, `time-slicing halves the victim: x${slowdown}`);
    // Separate contexts keep the crash (the victim only shares time with the crasher).
    assert.doesNotMatch(get("time-slicing", "crash").summary, /died|CUDA error/);
    const mps = get("mps", "crash");
    assert.equal(mps.status, "failed", "MPS propagates the fatal fault");
    assert.match(mps.summary, /ts-b|mps-b/);
    assert.match(mps.summary, /illegal-address|died/);
    assert.deepEqual(taggedPids(`SLICECHECK_RUN=${v.runId}@sim01`), []);
  });
});
