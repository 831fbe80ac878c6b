// run --drain and --report-to-slurm on a real Slurm (munge, slurmctld, a slurmd per simulated
// node): the run drains only what it tests, waits for the jobs there, resumes only what it
// drained; other nodes' states (an admin's drain, a running job) stay exactly as they were.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { applyUnderSlurm, slurmNodeOf, useSlurmCluster } from "../helpers/slurm-cluster.js";

interface Check {
  node: string;
  suite: string;
  title: string;
  status: string;
  code: string;
  message: string;
  stopMs: number;
  parameters: Record<string, string>;
}

describe("run --drain (real Slurm 22.05, real sshd, simulated H100 x3)", function () {
  this.timeout(360_000);
  const c = useSlurmCluster(3);
  const node = (name: string) => slurmNodeOf(c, name);
  let out = 0;
  const run = (...args: string[]) =>
    cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "health",
      "--duration",
      "1",
      "--db",
      join(c.dir, "r.db"),
      "--out",
      join(c.dir, `out${++out}`),
      "--json",
      ...args,
    );
  const drainCheck = (stdout: string, n: string) =>
    (JSON.parse(stdout) as { checks: Check[] }).checks.find(
      (k) => k.node === n && k.title === "Slurm node drained for the run",
    );

  it("drains its nodes, waits for their jobs, resumes only them; others untouched", async () => {
    await c.sh("sim03", "scontrol update nodename=sim03 state=drain reason='bad fan'");
    // A job on sim01 that the drain must wait for (15 s: long enough to outlast the run's start on a
    // loaded machine), and one on sim02, which the run does not test.
    await c.sh("sim01", "sbatch -w sim01 -p gpu -t 2 -o /dev/null --wrap 'sleep 15'");
    await c.sh("sim02", "sbatch -w sim02 -p gpu -t 5 -o /dev/null --wrap 'sleep 120'");
    for (let i = 0; i < 50 && !/ALLOCATED|MIXED/.test((await node("sim02")).state); i++)
      await new Promise((r) => setTimeout(r, 200));
    const before02 = await node("sim02");
    assert.match(before02.state, /ALLOCATED|MIXED/, "sim02's job started");

    const r = await run("--nodes", "sim01,sim03", "--drain");
    assert.equal(r.code, 0, r.stderr);
    const d1 = drainCheck(r.stdout, "sim01");
    assert.equal(d1?.status, "passed");
    const waited = Number(/ended after ([\d.]+) s/.exec(d1?.message ?? "")?.[1]);
    assert.ok(waited >= 2, `the run waited for sim01's job (${d1?.message})`);
    assert.match(
      drainCheck(r.stdout, "sim03")?.message ?? "",
      /already IDLE\+DRAIN \(bad fan\): left as it is/,
    );

    const [n1, n2, n3] = [await node("sim01"), await node("sim02"), await node("sim03")];
    assert.equal(n1.state, "IDLE", "sim01 resumed");
    assert.equal(n1.reason, null);
    assert.equal(n3.state, "IDLE+DRAIN", "sim03 stays drained by its admin");
    assert.equal(n3.reason, "bad fan");
    assert.deepEqual([n2.state, n2.reason], [before02.state, null], "sim02 untouched");
    assert.match(await c.sh("sim02", "squeue -h -w sim02 -o %T"), /RUNNING/);
  });

  it("--report-to-slurm leaves a node whose health failed drained, the check in its reason", async () => {
    const f = await cli(
      "sim",
      "fault",
      "sim01",
      "ecc-uncorrectable",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    const r = await run("--nodes", "sim01", "--drain", "--report-to-slurm");
    assert.equal(r.code, 1, r.stderr);
    const n1 = await node("sim01");
    assert.equal(n1.state, "IDLE+DRAIN");
    assert.match(
      n1.reason ?? "",
      /^slicecheck sc-\S+: 1 check\(s\) failed: health: has no uncorrected ECC errors: ECC_UNCORRECTED$/,
    );
    assert.match(r.stderr, /sim01: left drained for Slurm: slicecheck sc-/);
    // Without --report-to-slurm the same failing run resumes the node it drained.
    await c.sh("sim01", "scontrol update nodename=sim01 state=resume");
    const again = await run("--nodes", "sim01", "--drain");
    assert.equal(again.code, 1);
    assert.equal((await node("sim01")).state, "IDLE");
  });

  it("--report-to-slurm without --drain, and --drain with no slurm_node, are refused (exit 3)", async () => {
    const a = await run("--nodes", "sim01", "--report-to-slurm");
    assert.equal(a.code, 3);
    assert.match(a.stderr, /--report-to-slurm .*give --drain too/);
    // The same cluster, its inventory without slurm_node: nothing to drain.
    const plain = join(c.dir, "plain.yaml");
    writeFileSync(
      plain,
      readFileSync(c.inventoryPath, "utf8").replace(/^\s*slurm_node: .*\n/gm, ""),
    );
    const b = await cli(
      "run",
      "-i",
      plain,
      "--nodes",
      "sim01",
      "--drain",
      "--db",
      join(c.dir, "r.db"),
    );
    assert.equal(b.code, 3);
    assert.match(b.stderr, /no selected node has slurm_node in the inventory/);
  });

  it("apply's drain interlock reads the real Slurm: refused while idle, done once drained", async () => {
    const args = [
      "apply",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim02",
      "fixtures/layouts/default.yaml",
    ];
    const journal = ["--journal-dir", join(c.dir, "journal")];
    await c.sh("sim02", "scancel -w sim02");
    assert.equal((await node("sim02")).state, "IDLE");
    const refused = await cli(...args, "-c", "all-balanced", ...journal);
    assert.equal(refused.code, 2, refused.stdout);
    assert.match(
      `${refused.stdout}${refused.stderr}`,
      /Slurm node sim02 is IDLE, not drained: drain it first/,
    );
    const f = await cli(
      "sim",
      "fault",
      "sim02",
      "slurm",
      "--state",
      "drained",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    assert.deepEqual(Object.values(await node("sim02")).slice(1, 3), ["IDLE+DRAIN", "sim fault"]);
    const done = await cli(...args, "-c", "all-balanced", ...journal);
    assert.equal(done.code, 0, done.stderr);
    // …and the gres followed the new layout (slurm.conf/gres.conf regenerated, daemons restarted).
    assert.match(
      (await c.sh("sim02", "scontrol show node -o sim02")).replace(/.* Gres=(\S+) .*/s, "$1"),
      /^gpu:3g\.40gb:1,gpu:2g\.20gb:1,gpu:1g\.10gb:2$/,
    );
  });
  it("--drain with the slurm suite: probes run in the run's own reservation, nobody else's job does", async () => {
    await applyUnderSlurm(c, "sim01", "all-balanced");
    const flag = join(c.dir, "foreign-started");
    const started = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      "--suites",
      "slurm",
      "--drain",
      "--db",
      join(c.dir, "r.db"),
      "--out",
      join(c.dir, `out${++out}`),
      "--json",
    );
    // Once the run has drained sim01, a tenant's job asks for it and must wait.
    for (let i = 0; i < 150; i++) {
      const n = await node("sim01");
      if (n.state.includes("DRAIN") && n.reason?.startsWith("slicecheck ")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await c.sh("sim01", `sbatch -w sim01 -p mig -t 2 -o /dev/null --wrap 'date +%s%3N > ${flag}'`);
    const r = await started;
    assert.equal(r.code, 0, r.stderr);
    const checks = (JSON.parse(r.stdout) as { runId: string; checks: Check[] }).checks;
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const probes = checks.filter((k) => k.title.startsWith("probe job on "));
    assert.equal(probes.length, 3, checks.map((k) => `${k.title}: ${k.message}`).join("\n"));
    for (const p of probes) {
      assert.equal(p.status, "passed", p.message);
      assert.equal(p.parameters.reservation, `slicecheck-${runId}-sim01`);
    }
    // The tenant's job started only once the run had given the node back.
    for (let i = 0; i < 100; i++) {
      if ((await c.sh("sim01", `cat ${flag} 2>/dev/null || true`)).trim()) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const foreignAt = Number((await c.sh("sim01", `cat ${flag}`)).trim());
    const lastProbe = Math.max(...probes.map((p) => p.stopMs));
    assert.ok(
      foreignAt > lastProbe,
      `the tenant's job started ${foreignAt - lastProbe} ms after the last probe`,
    );
    assert.equal((await node("sim01")).state.replace(/\+.*/, ""), "IDLE");
    assert.match(await c.sh("sim01", "scontrol show reservation"), /No reservations in the system/);
  });
});
