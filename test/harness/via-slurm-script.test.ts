// The job array's batch script, run by bash as Slurm would run it: task i runs the node run for
// node i, and only on node i's Slurm node; anywhere else it refuses before slicecheck starts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { arrayScript } from "../../src/harness/via-slurm-script.js";
import { tempDir } from "../helpers/tmp.js";

describe("run --via slurm: the array's batch script", () => {
  const dir = tempDir("via-script");
  // A stand-in for slicecheck that prints the arguments it got and exits 1.
  const fake = join(dir, "fake.sh");
  writeFileSync(fake, 'echo "args: $*"; exit 1\n', { mode: 0o755 });
  const script = join(dir, "via-slurm.sh");
  writeFileSync(
    script,
    arrayScript(
      "sc-test",
      [fake, "run", "--suites", "stress"],
      [
        { node: "gpu-a", slurmNode: "a01", out: join(dir, "gpu-a") },
        { node: "gpu b", slurmNode: "b01", out: join(dir, "gpu b") },
      ],
    ),
  );
  const task = (id: string, on: string) =>
    spawnSync("bash", [script], {
      encoding: "utf8",
      env: {
        PATH: process.env.PATH,
        SLURM_ARRAY_TASK_ID: id,
        SLURMD_NODENAME: on,
        SLURM_JOB_ID: "7",
      },
    });

  it("task 1 runs slicecheck for node 1 on its Slurm node, its exit code kept in the node's folder", () => {
    spawnSync("mkdir", ["-p", join(dir, "gpu b")]);
    const r = task("1", "b01");
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout, /^slicecheck: array task 1 \(job 7\) on Slurm node b01 tests gpu b$/m);
    assert.match(r.stdout, /^args: run --suites stress --nodes gpu b --out .*\/gpu b$/m);
    assert.equal(readFileSync(join(dir, "gpu b", "exit-code"), "utf8"), "1\n");
  });

  it("a task on another Slurm node refuses (exit 2) and never starts slicecheck", () => {
    const r = task("0", "b01");
    assert.equal(r.status, 2);
    assert.match(
      r.stderr,
      /array task 0 tests gpu-a, pinned to Slurm node a01, but it runs on 'b01': refusing to test the wrong node/,
    );
    assert.doesNotMatch(r.stdout, /args:/);
    assert.equal(existsSync(join(dir, "gpu-a", "exit-code")), false);
  });

  it("a task id that is none of the run's refuses (exit 2)", () => {
    const r = task("5", "a01");
    assert.equal(r.status, 2);
    assert.match(r.stderr, /array task '5' is none of run sc-test's \(0-1\)/);
  });
});
