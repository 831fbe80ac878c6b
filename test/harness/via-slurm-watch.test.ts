// run --via slurm's watch: a task Slurm keeps COMPLETING (its batch script ended, a process of
// the job it cannot kill or a slurmd that does not answer) is taken as ended after a grace,
// never waited on for ever; the clock restarts whenever the task is seen in any other state.
import assert from "node:assert/strict";
import type { ViaSlurmJob } from "../../src/harness/via-slurm-options.js";
import { COMPLETING_GRACE_S, stuckCompleting } from "../../src/harness/via-slurm-watch.js";

const job = (jobId: string): ViaSlurmJob => ({
  node: "sim03",
  slurmNode: "sim03",
  gres: null,
  jobId,
  states: ["PENDING", "RUNNING", "COMPLETING"],
  ranOn: "sim03",
  note: null,
  exitCode: null,
});

describe("run --via slurm: a task stuck COMPLETING", () => {
  it("is waited on for its grace, then taken as ended, naming its node and why", () => {
    const since = new Map<string, number>();
    const j = job("7_2");
    assert.equal(stuckCompleting(j, "COMPLETING", 100, since), null);
    assert.equal(stuckCompleting(j, "COMPLETING", 100 + COMPLETING_GRACE_S - 1, since), null);
    const why = stuckCompleting(j, "COMPLETING", 100 + COMPLETING_GRACE_S, since);
    assert.equal(
      why,
      `still COMPLETING ${COMPLETING_GRACE_S} s after its batch script ended: Slurm has not confirmed that the job's processes on sim03 are gone (one it cannot kill, or a slurmd that does not answer), so the controller gathered the task's results without waiting longer (--completing-grace ${COMPLETING_GRACE_S})`,
    );
  });

  it("waits --completing-grace instead where the run gives one", () => {
    const since = new Map<string, number>();
    const j = job("7_2");
    assert.equal(stuckCompleting(j, "COMPLETING", 0, since, 300), null);
    assert.equal(stuckCompleting(j, "COMPLETING", COMPLETING_GRACE_S, since, 300), null);
    assert.equal(stuckCompleting(j, "COMPLETING", 299, since, 300), null);
    assert.match(
      stuckCompleting(j, "COMPLETING", 300, since, 300) ?? "",
      /\(--completing-grace 300\)$/,
    );
  });

  it("counts each task's own time, and starts again when the task is seen in another state", () => {
    const since = new Map<string, number>();
    const a = job("7_0");
    const b = job("7_1");
    assert.equal(stuckCompleting(a, "COMPLETING", 0, since), null);
    assert.equal(stuckCompleting(b, "RUNNING", 0, since), null);
    assert.equal(stuckCompleting(b, "COMPLETING", 20, since), null);
    // a's grace has passed, b's (from 20 s) has not.
    assert.ok(stuckCompleting(a, "COMPLETING", COMPLETING_GRACE_S, since));
    assert.equal(stuckCompleting(b, "COMPLETING", COMPLETING_GRACE_S, since), null);
    // A requeued task (COMPLETING, then PENDING again) starts its count afresh.
    assert.equal(stuckCompleting(b, "PENDING", 40, since), null);
    assert.equal(stuckCompleting(b, "COMPLETING", 41, since), null);
    assert.equal(stuckCompleting(b, "COMPLETING", 41 + COMPLETING_GRACE_S - 1, since), null);
    // Never for a state that is not COMPLETING, however long.
    assert.equal(stuckCompleting(a, "RUNNING", 10_000, since), null);
  });
});
