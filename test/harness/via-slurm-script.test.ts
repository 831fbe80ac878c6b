// The job array's batch script, run by bash as Slurm would run it: task i runs the node run for
// node i, and only on node i's Slurm node; anywhere else it refuses before slicecheck starts.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { arrayScript, CONFINED_FILE } from "../../src/harness/via-slurm-script.js";
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

  it("where devices are confined: a task whose nvidia-smi lists fewer devices than it holds refuses (exit 2) before slicecheck", () => {
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    const smi = join(bin, "nvidia-smi");
    const confined = arrayScript(
      "sc-test",
      [fake, "run"],
      [{ node: "gpu-c", slurmNode: "c01", out: join(dir, "gpu-c"), devices: 3 }],
    );
    const path = join(dir, "confined.sh");
    writeFileSync(path, confined);
    mkdirSync(join(dir, "gpu-c"), { recursive: true });
    const runWith = (listing: string) => {
      writeFileSync(smi, `#!/bin/sh\nprintf '%s' '${listing}'\n`, { mode: 0o755 });
      return spawnSync("bash", [path], {
        encoding: "utf8",
        env: {
          PATH: `${bin}:${process.env.PATH}`,
          SLURM_ARRAY_TASK_ID: "0",
          SLURMD_NODENAME: "c01",
          SLURM_JOB_ID: "8",
        },
      });
    };
    // One whole GPU and one MIG GPU with one instance: 2 devices of the 3 it holds.
    const seen =
      "GPU 0: NVIDIA H100 (UUID: GPU-a)\nGPU 1: NVIDIA H100 (UUID: GPU-b)\n  MIG 3g.40gb     Device  0: (UUID: MIG-c)\n";
    const r = runWith(seen);
    assert.equal(r.status, 2, r.stderr);
    assert.doesNotMatch(r.stdout, /args:/);
    assert.match(r.stderr, /asked Slurm for 3 GPU device\(s\) of c01 .* lists 2: /);
    assert.match(readFileSync(join(dir, "gpu-c", CONFINED_FILE), "utf8"), /lists 2/);
    assert.equal(readFileSync(join(dir, "gpu-c", "exit-code"), "utf8"), "2\n");
    // A second instance on GPU 1: all 3 seen, slicecheck starts.
    const all = runWith(`${seen}  MIG 3g.40gb     Device  1: (UUID: MIG-d)\n`);
    assert.equal(all.status, 1, all.stderr);
    assert.match(
      all.stdout,
      /asked for 3 GPU device\(s\) of c01, and nvidia-smi -L in it lists 3$/m,
    );
    assert.match(all.stdout, /^args: run --nodes gpu-c /m);
    // A lost GPU's line: the job reached it; slicecheck starts and reports the loss itself.
    const lost = runWith(
      "Unable to determine the device handle for GPU0000:07:00.0: GPU is lost.  Reboot the system to recover this GPU\nGPU 0: NVIDIA H100 (UUID: GPU-a)\n",
    );
    assert.equal(lost.status, 1, lost.stderr);
    assert.match(lost.stdout, /^args: run --nodes gpu-c /m);
  });
});
