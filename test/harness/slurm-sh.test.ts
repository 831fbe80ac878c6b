// run --via slurm's Slurm commands: a slurmctld that drops the connection while it restarts is
// asked again for a while; Slurm's own refusals, any sbatch and a reservation's creation or
// deletion are not.
import assert from "node:assert/strict";
import type { SlicecheckError } from "../../src/errors.js";
import { slurmCommand } from "../../src/harness/slurm-sh.js";

/** An exec that answers with `answers` in turn (the last one for ever), counting its calls. */
function scripted(...answers: [code: number, stderr: string][]) {
  const calls: string[][] = [];
  const exec = async (argv: string[]) => {
    calls.push(argv);
    const [exitCode, stderr] = answers[Math.min(calls.length, answers.length) - 1] ?? [0, ""];
    return { exitCode, stdout: exitCode === 0 ? "NodeName=sim01\n" : "", stderr };
  };
  return { exec, calls };
}

// Slurm 22.05's words as this project's CI printed them from a restarting slurmctld.
const RESET = "slurm_load_partitions error: Connection reset by peer";
const ZERO = "slurm_load_ctl_conf error: Zero Bytes were transmitted or received";
const noWait = { sleep: async () => {} };

describe("run --via slurm: Slurm commands against a slurmctld that drops connections", () => {
  it("asks a query again while slurmctld drops it, and returns the answer", async () => {
    const s = scripted([1, RESET], [1, ZERO], [0, ""]);
    const out = await slurmCommand(s.exec, "sim01", ["scontrol", "show", "node"], noWait);
    assert.equal(out, "NodeName=sim01\n");
    assert.equal(s.calls.length, 3);
  });

  it("gives up after its window, saying how often it asked and Slurm's last words", async () => {
    // A window of 0 s: the first failure stands.
    const once = scripted([1, RESET]);
    await assert.rejects(
      slurmCommand(once.exec, "sim01", ["squeue"], { retryS: 0, ...noWait }),
      (e: SlicecheckError) =>
        e.code === "SLURM" && e.message === `squeue on sim01 failed (exit 1): ${RESET}`,
    );
    assert.equal(once.calls.length, 1);
    // A 2-s window on a clock of the test's own: waits double from 0.5 s; a third wait (2 s)
    // would end past the window, so the third failure stands, counted.
    let clock = 0;
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      clock += ms;
    };
    const t = scripted([1, RESET]);
    await assert.rejects(
      slurmCommand(t.exec, "sim01", ["squeue"], { retryS: 2, now: () => clock, sleep }),
      (e: SlicecheckError) =>
        e.message === `squeue on sim01 failed (exit 1) (asked 3 times over 2 s): ${RESET}`,
    );
    assert.deepEqual(waits, [500, 1000]);
    assert.equal(t.calls.length, 3);
  });

  it("never asks Slurm's own refusal again, nor a submission", async () => {
    const refused = scripted([1, "slurm_load_jobs error: Invalid job id specified"], [0, ""]);
    await assert.rejects(
      slurmCommand(refused.exec, "sim01", ["squeue", "-j", "9"], noWait),
      /Invalid job id specified/,
    );
    assert.equal(refused.calls.length, 1);
    const sbatch = scripted(
      [1, "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received"],
      [0, ""],
    );
    await assert.rejects(
      slurmCommand(sbatch.exec, "sim01", ["sbatch", "x.sh"], noWait),
      /Zero Bytes/,
    );
    assert.equal(
      sbatch.calls.length,
      1,
      "a lost answer to sbatch may mean a landed job: never twice",
    );
    // A reservation's creation or deletion (run --drain's windows) is not the same twice either;
    // a drain's `scontrol update` is, and is asked again.
    for (const verb of ["create", "delete"]) {
      const r = scripted([1, ZERO], [0, ""]);
      await assert.rejects(
        slurmCommand(r.exec, "sim01", ["scontrol", verb, "reservation=x"], noWait),
        /Zero Bytes/,
      );
      assert.equal(r.calls.length, 1, verb);
    }
    const update = scripted([1, RESET], [0, ""]);
    await slurmCommand(update.exec, "sim01", ["scontrol", "update", "state=drain"], noWait);
    assert.equal(update.calls.length, 2);
  });
});
