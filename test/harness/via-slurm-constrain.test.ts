// run --via slurm where Slurm confines a job's devices to its gres (cgroup.conf
// ConstrainDevices=yes, what `sim up --slurm` writes): a job holding no gres sees no GPU (as on
// a real node), so each task asks for all of its node's GPU gres and passes; what a confined
// job cannot do (--layout, the slurm suite's probe jobs) is refused before anything is
// submitted. Real Slurm 22.05, real sshd, one simulated H100.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { applyUnderSlurm, useSlurmCluster } from "../helpers/slurm-cluster.js";

interface ViaJson {
  exitCode: number;
  arrayId: string;
  jobs: { node: string; gres: string | null; exitCode: number | null }[];
  checks: { node: string; suite: string; status: string; code: string; message: string }[];
}

describe("run --via slurm under ConstrainDevices=yes (real Slurm 22.05, simulated H100 x1)", function () {
  this.timeout(180_000);
  const c = useSlurmCluster(1);
  const via = async (label: string, ...more: string[]) => {
    const out = join(c.dir, label);
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--via",
      "slurm",
      "--start-timeout",
      "60",
      "--duration",
      "1",
      "--db",
      join(c.dir, "records.db"),
      "--out",
      out,
      "--json",
      ...(more.length ? more : ["--suites", "stress"]),
    );
    return { ...r, out };
  };
  const jobsInSlurm = async () => (await c.sh("sim01", "squeue -h -t all -o %i")).trim();

  it("refuses --layout and the slurm suite (exit 3) before anything is submitted or written", async () => {
    assert.equal(await jobsInSlurm(), "");
    const layout = await via(
      "refused-layout",
      "--layout",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
    );
    assert.equal(layout.code, 3, layout.stderr);
    assert.match(
      layout.stderr,
      /--via slurm cannot apply --layout here: the cluster confines each job to the GPU devices it was allocated \(ConstrainDevices=yes, from cgroup\.conf \(ConstrainDevices=yes\)\).*run it directly over SSH instead/,
    );
    const slurm = await via("refused-slurm", "--suites", "stress,slurm");
    assert.equal(slurm.code, 3, slurm.stderr);
    assert.match(slurm.stderr, /cannot run the slurm suite here: .*probe jobs could never start/);
    assert.equal(await jobsInSlurm(), "", "nothing was submitted");
    assert.equal(existsSync(layout.out) || existsSync(slurm.out), false, "no folder written");
  });

  it("the simulation as Slurm: a job holding no gres sees no GPU, one holding the GPU sees it", async () => {
    const job = async (name: string, gres: string) => {
      const log = join(c.dir, `${name}.log`);
      await c.sh(
        "sim01",
        `sbatch --wait -w sim01 -p gpu ${gres} -o ${log} --wrap 'echo "fence=$SLICECHECK_SIM_FENCE"; nvidia-smi -L'`,
      );
      return readFileSync(log, "utf8");
    };
    const bare = await job("bare", "");
    assert.match(bare, /^fence=none$/m);
    assert.doesNotMatch(bare, /^GPU \d+:/m);
    const held = await job("held", "--gres=gpu:1");
    assert.match(held, /^GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-/m);
  });

  it("each task holds its node's GPU gres, sees every device, and passes", async () => {
    const r = await via("whole");
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as ViaJson;
    assert.deepEqual(
      j.jobs.map((x) => [x.node, x.gres, x.exitCode]),
      [["sim01", "gres:gpu:h100-80gb:1", 0]],
    );
    assert.deepEqual(
      j.checks.map((k) => [k.suite, k.status]),
      [["stress", "passed"]],
    );
    assert.match(
      readFileSync(join(r.out, "sim01", "job.log"), "utf8"),
      /^slicecheck: the job asked for 1 GPU device\(s\) of sim01, and nvidia-smi -L in it lists 1$/m,
    );
    // Slurm's own record of the task: it held the gres.
    const held = await c.sh("sim01", `squeue -h -r -t all -j ${j.arrayId} -o %b`);
    assert.equal(held.trim(), "gres:gpu:h100-80gb:1");
  });

  it("a MIG node: the task holds every instance's typed gres, and each instance is stressed", async () => {
    await applyUnderSlurm(c, "sim01", "all-balanced");
    const r = await via("mig");
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as ViaJson;
    const gres = j.jobs[0]?.gres ?? "";
    const n = [...gres.matchAll(/:(\d+)(?:,|$)/g)].reduce((s, m) => s + Number(m[1]), 0);
    assert.ok(n > 1, gres);
    assert.match(gres, /^gres:gpu:\dg\.\d+gb:\d(,gres:gpu:\dg\.\d+gb:\d)*$/);
    const stress = j.checks.filter((k) => k.suite === "stress");
    assert.equal(stress.length, n);
    assert.ok(stress.every((k) => k.status === "passed"));
    assert.match(
      readFileSync(join(r.out, "sim01", "job.log"), "utf8"),
      new RegExp(
        `asked for ${n} GPU device\\(s\\) of sim01, and nvidia-smi -L in it lists ${n}$`,
        "m",
      ),
    );
  });

  it("ConstrainDevices=no: the task holds no gres, as before", async () => {
    const f = await cli(
      "sim",
      "fault",
      "sim01",
      "slurm-unconstrained",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    try {
      const r = await via("unconstrained");
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /confined/);
      const j = JSON.parse(r.stdout) as ViaJson;
      assert.deepEqual(
        j.jobs.map((x) => [x.gres, x.exitCode]),
        [[null, 0]],
      );
    } finally {
      await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    }
  });
});
