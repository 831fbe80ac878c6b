// The end of `run --via slurm` when the controller was interrupted: its exit is 128 + the
// signal it got, as a direct run's (SIGINT 130, SIGTERM 143), so a scheduler or supervisor that
// sent SIGTERM sees its own signal. The gathering runs on folders, no Slurm needed.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gatherViaSlurm } from "../../src/harness/via-slurm-gather.js";
import type { ViaSlurmOptions } from "../../src/harness/via-slurm-options.js";
import { tempDir } from "../helpers/tmp.js";

function gather(reason: string | null, interrupted: boolean) {
  const outDir = tempDir("via-gather");
  mkdirSync(join(outDir, "sim01"));
  const ac = new AbortController();
  if (reason) ac.abort(reason);
  const o: ViaSlurmOptions = {
    runId: "sc-gather",
    label: null,
    nodes: [],
    inventoryFile: join(outDir, "sim.yaml"),
    suites: ["stress"],
    args: [],
    outDir,
    partition: null,
    reservation: null,
    startTimeoutS: 60,
    allure: false,
    command: [],
    signal: ac.signal,
    progress: () => {},
  };
  const job = {
    node: "sim01",
    slurmNode: "sim01",
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
  return { exit: r.exitCode, written: via.exitCode };
}

describe("run --via slurm: the interrupted controller's exit code", () => {
  it("SIGTERM gives 143 and SIGINT 130, as a direct run; not interrupted, the nodes' verdict", () => {
    assert.deepEqual(gather("SIGTERM", true), { exit: 143, written: 143 });
    assert.deepEqual(gather("SIGINT", true), { exit: 130, written: 130 });
    // A task that left no results is broken (2), not an interrupt.
    assert.deepEqual(gather(null, false), { exit: 2, written: 2 });
  });
});
