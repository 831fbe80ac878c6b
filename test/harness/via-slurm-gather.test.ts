// The end of `run --via slurm` when the controller was interrupted: its exit is 128 + the
// signal it got, as a direct run's (SIGINT 130, SIGTERM 143), so a scheduler or supervisor that
// sent SIGTERM sees its own signal. The gathering runs on folders, no Slurm needed.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gatherViaSlurm } from "../../src/harness/via-slurm-gather.js";
import type { ViaSlurmOptions } from "../../src/harness/via-slurm-options.js";
import { CONFINED_FILE } from "../../src/harness/via-slurm-script.js";
import { tempDir } from "../helpers/tmp.js";

function gather(reason: string | null, interrupted: boolean, confined?: string) {
  const outDir = tempDir("via-gather");
  mkdirSync(join(outDir, "sim01"));
  if (confined) writeFileSync(join(outDir, "sim01", CONFINED_FILE), `${confined}\n`);
  const ac = new AbortController();
  if (reason) ac.abort(reason);
  const o: ViaSlurmOptions = {
    runId: "sc-gather",
    label: null,
    nodes: [],
    inventoryFile: join(outDir, "sim.yaml"),
    suites: ["stress"],
    args: [],
    layout: null,
    outDir,
    partition: null,
    reservation: null,
    startTimeoutS: 60,
    timeLimitS: null,
    completingGraceS: 30,
    allure: false,
    command: [],
    signal: ac.signal,
    progress: () => {},
  };
  const job = {
    node: "sim01",
    slurmNode: "sim01",
    gres: null,
    jobId: "7_0",
    states: ["PENDING", "CANCELLED"],
    ranOn: null,
    note: null,
    exitCode: null,
  };
  const r = gatherViaSlurm(o, [job], interrupted);
  const via = JSON.parse(readFileSync(join(outDir, "via-slurm.json"), "utf8")) as {
    exitCode: number;
  };
  return { exit: r.exitCode, written: via.exitCode, checks: r.checks };
}

describe("run --via slurm: the interrupted controller's exit code", () => {
  it("SIGTERM gives 143 and SIGINT 130, as a direct run; not interrupted, the nodes' verdict", () => {
    const exits = (g: ReturnType<typeof gather>) => ({ exit: g.exit, written: g.written });
    assert.deepEqual(exits(gather("SIGTERM", true)), { exit: 143, written: 143 });
    assert.deepEqual(exits(gather("SIGINT", true)), { exit: 130, written: 130 });
    // A task that left no results is broken (2), not an interrupt.
    const none = gather(null, false);
    assert.deepEqual(exits(none), { exit: 2, written: 2 });
    assert.deepEqual(
      none.checks.map((c) => [c.status, c.code]),
      [["broken", "SLURM_JOB"]],
    );
  });

  it("a task that saw fewer GPU devices than it holds is broken with the confinement's code, never failed", () => {
    const g = gather(
      null,
      false,
      "slicecheck: array task 0 (job 7) asked Slurm for 2 GPU device(s) of sim01 (…) but nvidia-smi -L in the job lists 0",
    );
    assert.equal(g.exit, 2);
    assert.deepEqual(
      g.checks.map((c) => [c.node, c.status, c.code]),
      [["sim01", "broken", "SLURM_DEVICES_CONFINED"]],
    );
    assert.match(
      g.checks[0]?.message ?? "",
      /^array task 0 .* lists 0 \(job 7_0 ended CANCELLED\)$/,
    );
  });
});
