// The slurm suite end to end: a real Slurm (munge, slurmctld, a slurmd per node) over
// simulated H100s, probe jobs through srun; each checker shown failing on a planted fault.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { applyUnderSlurm, useSlurmCluster } from "../helpers/slurm-cluster.js";

interface Check {
  node: string;
  title: string;
  status: string;
  code: string;
  message: string;
  figures: Record<string, unknown>;
  parameters: Record<string, string>;
}

describe("slurm suite (real Slurm 22.05, real sshd, simulated H100 x2)", function () {
  this.timeout(240_000);
  const c = useSlurmCluster(2);
  /** sim01's earlier Slurm faults cleared, then `kind` planted. */
  const replant = async (kind: string) => {
    for (const args of [["--clear"], [kind]]) {
      const f = await cli("sim", "fault", "sim01", ...args, "--inventory", c.inventoryPath);
      assert.equal(f.code, 0, f.stderr);
    }
  };
  let n = 0;
  const runSlurm = async () => {
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "slurm",
      "--db",
      join(c.dir, "r.db"),
      "--out",
      join(c.dir, `out${++n}`),
      "--json",
    );
    const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
    const of = (node: string, title: string) => {
      const x = checks.find((k) => k.node === node && k.title === title);
      assert.ok(x, `${node}: no check "${title}" in ${checks.map((k) => k.title).join(", ")}`);
      return x;
    };
    return { code: r.code, checks, of, stderr: r.stderr };
  };

  // The unconstrained run comes first; the passing run after it clears the fault, so that one
  // run shows both a matching gres and devices constrained again (one Slurm run fewer).
  it("devices left unconstrained (ConstrainDevices=no) fail confinement, as the job saw it", async () => {
    await applyUnderSlurm(c, "sim01", "all-balanced");
    await replant("slurm-unconstrained");
    assert.match(
      readFileSync(join(c.dir, ".sim.d", "slurm", "cgroup.conf"), "utf8"),
      /^ConstrainDevices=no$/m,
    );
    const r = await runSlurm();
    assert.equal(r.code, 1);
    const k = r.of("sim01", "a job reaches only its own instance");
    assert.equal(k.status, "failed");
    assert.equal(k.code, "TENANT_NOT_CONFINED");
    assert.equal(k.parameters.ConstrainDevices, "no");
    assert.match(k.message, /reaches more than its allocation \(ConstrainDevices=no\)/);
    assert.match(k.message, /its nvidia-smi -L lists 3 instance\(s\) not its own/);
    assert.match(k.message, /opens the \/dev\/nvidia-caps access of 3 other GPU instance\(s\)/);
    assert.match(
      k.message,
      /its CUDA computes on 3 neighbour\(s\) named by UUID \(gpu0\/gi\d+\/ci0 MIG-/,
    );
    assert.equal(k.figures.neighboursReached, 9);
    // Slurm's CUDA_VISIBLE_DEVICES (the global gres index) names no CUDA device on a MIG GPU:
    // the tenant's job cannot compute on what it was given, whatever Slurm's records say.
    const probe = r.of("sim01", "probe job on 2g.20gb lands on one 2g.20gb instance");
    assert.equal(probe.status, "failed");
    assert.equal(probe.code, "SLURM_PROBE_DEVICE");
    assert.match(
      probe.message,
      /its CUDA sees no device \(CUDA_VISIBLE_DEVICES=\d as Slurm left it\): CUDA error: no CUDA-capable device is detected/,
    );
  });

  it("a matching gres passes, each probe job lands on an instance of its own profile, and devices constrained again confine the jobs", async () => {
    // The layout of the test before, its planted fault removed: constrained again.
    const f = await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    assert.match(
      readFileSync(join(c.dir, ".sim.d", "slurm", "cgroup.conf"), "utf8"),
      /^ConstrainDevices=yes$/m,
    );
    const r = await runSlurm();
    assert.equal(
      r.code,
      0,
      r.checks
        .filter((k) => k.status !== "passed")
        .map((k) => k.message)
        .join("\n"),
    );
    const version = (await c.sh("sim01", "scontrol version")).trim().replace(/^slurm(-wlm)? /, "");
    // As root (CI), slurmctld runs as Debian's `slurm` user, as on a real controller.
    if (process.getuid?.() === 0)
      assert.match(await c.sh("sim01", "scontrol show config"), /^SlurmUser\s*=\s*slurm\(\d+\)$/m);
    assert.equal(r.of("sim01", "Slurm knows the node").figures.slurmVersion, version);
    for (const p of ["1g.10gb", "2g.20gb", "3g.40gb"]) {
      const k = r.of("sim01", `probe job on ${p} lands on one ${p} instance`);
      assert.match(k.parameters["landed on"] ?? "", new RegExp(` ${p.replace(".", "\\.")} MIG-`));
      assert.ok(Number(k.figures.tflops) > 0, "the stress inside the job computed");
      // Named as on a real node: gres.conf's /dev/nvidia-caps File, through the driver's
      // mig-minors to the instance's GI/CI.
      assert.match(
        k.parameters["device named by"] ?? "",
        /\/nvidia-caps\/nvidia-cap\d+ \(mig-minors: gpu0\/gi\d+\/ci0\)$/,
      );
      assert.match(k.parameters["landed on"] ?? "", /^gpu0\/gi\d+\/ci0 /);
      assert.equal(
        k.parameters["device named by"]?.replace(/.*mig-minors: (\S+)\)$/, "$1"),
        k.parameters["landed on"]?.split(" ")[0],
      );
    }
    // Under ConstrainDevices=yes each job saw, opened and reached only its own instance; the
    // probe set nothing: CUDA_VISIBLE_DEVICES is Slurm's, renumbered from 0 in the job's cgroup.
    const conf = r.of("sim01", "a job reaches only its own instance");
    assert.equal(conf.status, "passed", conf.message);
    assert.equal(conf.parameters.ConstrainDevices, "yes");
    assert.equal(conf.figures.jobs, 3);
    // 4 instances: each of the 3 jobs tried the 3 that are not its own, and was refused.
    assert.equal(conf.figures.neighboursTried, 9);
    assert.equal(conf.figures.neighboursReached, 0);
    assert.equal(
      r.of("sim01", "probe job on 2g.20gb lands on one 2g.20gb instance").parameters[
        "CUDA_VISIBLE_DEVICES in the job"
      ],
      "0",
    );
    // sim02 is a whole card: no MIG partition check, no probes.
    assert.deepEqual(
      r.checks.filter((k) => k.node === "sim02").map((k) => k.title),
      ["Slurm knows the node", "gres matches the MIG instances"],
    );
  });

  it("a gres left stale by a layout change fails with the counts per profile", async () => {
    const f = await cli(
      "sim",
      "fault",
      "sim01",
      "slurm-stale-gres",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    await applyUnderSlurm(c, "sim01", "all-1g.10gb");
    const r = await runSlurm();
    assert.equal(r.code, 1);
    const g = r.of("sim01", "gres matches the MIG instances");
    assert.equal(g.status, "failed");
    assert.equal(g.code, "SLURM_GRES_MISMATCH");
    assert.match(g.message, /1g\.10gb: scontrol has 2, the GPUs have 7/);
    assert.match(g.message, /2g\.20gb: scontrol has 1, the GPUs have 0/);
    assert.match(g.message, /3g\.40gb: scontrol has 1, the GPUs have 0/);
    assert.match(g.message, /1g\.10gb: gres\.conf has 2, the GPUs have 7/);
    assert.equal(r.of("sim02", "gres matches the MIG instances").status, "passed");
  });

  it("a probe job landing on the wrong profile fails, although every count is right", async () => {
    const cleared = await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    assert.equal(cleared.code, 0, cleared.stderr);
    await applyUnderSlurm(c, "sim01", "all-balanced");
    const f = await cli("sim", "fault", "sim01", "slurm-swap-gres", "--inventory", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    const r = await runSlurm();
    assert.equal(r.code, 1);
    assert.equal(r.of("sim01", "gres matches the MIG instances").status, "passed");
    const wrong = r.checks.filter((k) => k.code === "SLURM_PROBE_WRONG_PROFILE");
    assert.deepEqual(wrong.map((k) => k.title).sort(), [
      "probe job on 2g.20gb lands on one 2g.20gb instance",
      "probe job on 3g.40gb lands on one 3g.40gb instance",
    ]);
    assert.match(wrong[0]?.message ?? "", /landed on gpu0\/gi\d+\/ci0, a [23]g\.[24]0gb instance/);
    assert.equal(
      r.of("sim01", "probe job on 1g.10gb lands on one 1g.10gb instance").status,
      "passed",
    );
  });

  it("a MIG node in a whole-card partition fails, naming the partition", async () => {
    await replant("slurm-mixed-partition");
    const r = await runSlurm();
    const k = r.of("sim01", "MIG gres only in MIG partitions");
    assert.equal(k.status, "failed");
    assert.equal(k.code, "SLURM_PARTITION");
    assert.match(k.message, /sim01 offers MIG gres but is in whole-card partition\(s\) gpu/);
    assert.equal(r.of("sim01", "gres matches the MIG instances").status, "passed");
  });

  it("a site naming its MIG gres mig:<profile> (the document's way) is followed, probes included", async () => {
    await replant("slurm-mig-naming");
    assert.match(
      await c.sh("sim01", "scontrol show node -o sim01"),
      /Gres=mig:3g\.40gb:1,mig:2g\.20gb:1,mig:1g\.10gb:2 /,
    );
    const r = await runSlurm();
    assert.equal(
      r.code,
      0,
      r.checks
        .filter((k) => k.status !== "passed")
        .map((k) => `${k.title}: ${k.message}`)
        .join("\n"),
    );
    for (const p of ["1g.10gb", "2g.20gb", "3g.40gb"]) {
      const k = r.of("sim01", `probe job on ${p} lands on one ${p} instance`);
      // No CUDA_VISIBLE_DEVICES for a generic gres: the job's own record gave the index.
      assert.match(k.parameters["device named by"] ?? "", /mig-minors: gpu0\/gi\d+\/ci0/);
      assert.match(k.parameters["landed on"] ?? "", new RegExp(` ${p.replace(".", "\\.")} MIG-`));
    }
  });
});

describe("slurm suite without Slurm (real sshd, simulated H100)", function () {
  this.timeout(120_000);
  const c = useCluster(1);

  it("a node without slurm_node is broken with what to set, never a crash or a pass", async () => {
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "slurm",
      "--db",
      join(c.dir, "r.db"),
      "--out",
      join(c.dir, "out"),
      "--json",
    );
    assert.equal(r.code, 2, r.stderr);
    const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks;
    assert.deepEqual(
      checks.map((k) => [k.title, k.status, k.code]),
      [
        ["Slurm knows the node", "broken", "SLURM_NOT_CONFIGURED"],
        ["gres matches the MIG instances", "broken", "SLURM_NOT_CONFIGURED"],
        // Root on a node without a scheduler sees every instance: never a pass.
        ["a job reaches only its own instance", "skipped", "NOT_ASSESSED"],
      ],
    );
    assert.match(checks[0]?.message ?? "", /names no slurm_node for sim01; set it/);
    assert.match(
      checks[2]?.message ?? "",
      /sim01 has no scheduler \(no slurm_node\): the harness is root there and sees every instance, so what a tenant can reach is NOT ASSESSED/,
    );
  });
});
