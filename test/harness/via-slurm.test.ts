// run --via slurm on a real Slurm: ONE job array whose tasks are pinned each to its node runs
// slicecheck there, every task writes to one shared PostgreSQL, the controller shows the tasks'
// states and gathers one run's reports; the same checks as a direct run of the same nodes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { cli } from "../helpers/cli.js";
import { taggedPids, waitFor } from "../helpers/cluster.js";
import { xsdErrors } from "../helpers/junit-xsd.js";
import { usePostgres } from "../helpers/postgres.js";
import { applyUnderSlurm, useSlurmCluster } from "../helpers/slurm-cluster.js";

interface Check {
  node: string;
  suite: string;
  title: string;
  status: string;
  code: string;
  message: string;
}
interface ViaJson {
  runId: string;
  exitCode: number;
  arrayId: string;
  jobs: {
    node: string;
    slurmNode: string;
    jobId: string;
    states: string[];
    ranOn: string | null;
    note: string | null;
    exitCode: number | null;
  }[];
  checks: Check[];
}

const NODES = ["sim01", "sim02", "sim03", "sim04"];
const tuples = (checks: Check[]) =>
  checks.map((k) => [k.node, k.suite, k.title, k.status].join(" | ")).sort();

describe("run --via slurm (real Slurm 22.05, real PostgreSQL, simulated H100 x4)", function () {
  this.timeout(300_000);
  const c = useSlurmCluster(4);
  const server = usePostgres();
  /** TCP connections a node's sshd has accepted so far (its VERBOSE log). */
  const connections = (node: string) => {
    const log = join(c.dir, ".sim.d", "nodes", node, "sshd.log");
    return existsSync(log)
      ? readFileSync(log, "utf8")
          .split("\n")
          .filter((l) => /Connection from \S+ port \d+ on /.test(l)).length
      : 0;
  };
  const run = async (label: string, via: boolean, ...more: string[]) => {
    const t0 = Date.now();
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      ...(via ? ["--via", "slurm", "--start-timeout", "60"] : []),
      ...(more.length ? more : ["--suites", "stress"]),
      "--duration",
      "1",
      "--label",
      label,
      "--db",
      server.url,
      "--out",
      join(c.dir, label),
      "--json",
    );
    return { ...r, wallS: (Date.now() - t0) / 1000, out: join(c.dir, label) };
  };

  it("gives the same checks as a direct run, from one array whose tasks each ran on their node", async () => {
    const direct = await run("direct", false);
    assert.equal(direct.code, 0, direct.stderr);
    const before = NODES.map(connections);
    const r = await run("via-ok", true);
    assert.equal(r.code, 0, r.stderr);
    // Each task ran its node's commands right there (local transport): no SSH connection
    // reached sim02-sim04; sim01's are the controller's own, to submit and watch the array.
    assert.deepEqual(
      NODES.slice(1).map(connections),
      before.slice(1),
      "the tasks opened no SSH connection",
    );
    // Measured, never asserted: the scheduler's start-up is the price of the fleet path.
    console.log(
      `      wall time: direct ${direct.wallS.toFixed(1)} s, via slurm ${r.wallS.toFixed(1)} s`,
    );
    const j = JSON.parse(r.stdout) as ViaJson;
    const d = JSON.parse(direct.stdout) as { checks: Check[] };
    assert.equal(j.checks.length, NODES.length);
    assert.deepEqual(tuples(j.checks), tuples(d.checks));
    // One array: every task is <array id>_<i>, task i tested node i, on that node's slurmd.
    assert.match(j.arrayId, /^\d+$/);
    assert.deepEqual(
      j.jobs.map((x) => [x.node, x.jobId, x.ranOn, x.states.includes("RUNNING"), x.exitCode]),
      NODES.map((n, i) => [n, `${j.arrayId}_${i}`, n, true, 0]),
    );
    for (const [i, n] of NODES.entries())
      assert.match(
        readFileSync(join(r.out, n, "job.log"), "utf8"),
        new RegExp(
          `^slicecheck: array task ${i} \\(job \\d+\\) on Slurm node ${n} tests ${n}$`,
          "m",
        ),
      );
    // One run's reports: a JUnit file valid against the schema with every node's testcase.
    const junit = join(r.out, "junit.xml");
    assert.equal(xsdErrors(junit), null);
    const cases = [
      ...readFileSync(junit, "utf8").matchAll(/<testcase classname="stress\.(sim\d+)\./g),
    ];
    assert.deepEqual(cases.map((m) => m[1]).sort(), NODES);
    const ctx = JSON.parse(readFileSync(join(r.out, "run.json"), "utf8")) as {
      runId: string;
      nodes: { node: string; driver: string | null }[];
    };
    assert.equal(ctx.runId, j.runId);
    assert.deepEqual(
      ctx.nodes.map((n) => [n.node, n.driver !== null]),
      NODES.map((n) => [n, true]),
    );
    // `slicecheck report` builds one Allure report from the merged results.
    const rep = await cli(
      "report",
      "--results",
      join(r.out, "allure-results"),
      "--out",
      join(r.out, "report"),
    );
    assert.equal(rep.code, 0, rep.stderr);
    assert.match(rep.stdout, /4 passed, 0 failed, 0 broken, 0 skipped on 4 node\(s\)/);
    // Every task recorded into the one shared database, as one run.
    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    const rows = (
      await db.query(
        "SELECT n.node, r.id, r.status FROM runs r JOIN nodes n ON n.run_id = r.id WHERE r.label = 'via-ok' ORDER BY n.node",
      )
    ).rows;
    await db.end();
    assert.deepEqual(
      rows,
      NODES.map((node) => ({ node, id: j.runId, status: "passed" })),
    );
  });

  it("a node drained before the run is a broken SLURM_JOB check (exit 2); the other nodes' checks are kept", async () => {
    await c.sh("sim01", "scontrol update nodename=sim03 state=drain reason=via-test");
    try {
      // Two of the four nodes: the drained one and one beside it are the whole story.
      const r = await run("via-drained", true, "--nodes", "sim02,sim03", "--suites", "stress");
      assert.equal(r.code, 2, r.stderr);
      const j = JSON.parse(r.stdout) as ViaJson;
      const broken = j.checks.filter((k) => k.status !== "passed");
      assert.equal(broken.length, 1);
      assert.equal(broken[0]?.node, "sim03");
      assert.equal(broken[0]?.code, "SLURM_JOB");
      assert.equal(broken[0]?.title, "the node's Slurm job ran slicecheck");
      assert.match(
        broken[0]?.message ?? "",
        new RegExp(
          `^job ${j.arrayId}_1 \\(Slurm node sim03\\) ended CANCELLED \\(its Slurm node sim03 is IDLE\\+DRAIN \\(reason: via-test\\)`,
        ),
      );
      assert.match(broken[0]?.message ?? "", /no .*sim03\/job\.log: the task never started/);
      assert.deepEqual(
        j.checks
          .filter((k) => k.status === "passed")
          .map((k) => k.node)
          .sort(),
        ["sim02"],
      );
      // The merged JUnit shows it as an error, beside the others' testcases.
      const junit = readFileSync(join(r.out, "junit.xml"), "utf8");
      assert.match(
        junit,
        /<testcase classname="run\.sim03" name="the node&apos;s Slurm job ran slicecheck"[^>]*>\s*<error [^>]*type="SLURM_JOB"/,
      );
      assert.equal([...junit.matchAll(/<testcase classname="stress\./g)].length, 1);
    } finally {
      await c.sh("sim01", "scontrol update nodename=sim03 state=resume");
    }
  });

  it("a node whose checks fail makes the gathered run fail; the other nodes' tasks still pass", async () => {
    const f = await cli("sim", "fault", "sim02", "gpu-lost", "--inventory", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    try {
      const r = await run("via-bad", true, "--nodes", "sim01,sim02", "--suites", "stress");
      assert.notEqual(r.code, 0);
      const j = JSON.parse(r.stdout) as ViaJson;
      assert.equal(j.exitCode, r.code);
      assert.deepEqual(
        j.jobs.map((x) => [x.node, x.exitCode === 0]),
        ["sim01", "sim02"].map((n) => [n, n !== "sim02"]),
      );
      assert.ok(j.checks.some((k) => k.node === "sim02" && k.status !== "passed"));
      // The run's status is its worst task's, whichever finished last.
      const db = new pg.Client({ connectionString: server.url });
      await db.connect();
      const { rows } = await db.query("SELECT status FROM runs WHERE label = 'via-bad'");
      await db.end();
      assert.deepEqual(rows, [{ status: j.exitCode === 1 ? "failed" : "broken" }]);
    } finally {
      await cli("sim", "fault", "sim02", "--clear", "--inventory", c.inventoryPath);
    }
  });

  it("a task its node's Epilog keeps COMPLETING is taken as ended after --completing-grace, its results gathered (planted slurm-epilog-hang)", async () => {
    const fault = ["--inventory", c.inventoryPath];
    const f = await cli("sim", "fault", "sim04", "slurm-epilog-hang", ...fault);
    assert.equal(f.code, 0, f.stderr);
    try {
      // 10 s, not the default 30: a task that ends normally leaves COMPLETING within a second
      // or two, even on CI's loaded cores.
      const r = await run(
        "via-completing",
        true,
        "--nodes",
        "sim03,sim04",
        "--suites",
        "stress",
        "--completing-grace",
        "10s",
      );
      assert.equal(r.code, 0, r.stderr);
      const j = JSON.parse(r.stdout) as ViaJson;
      const [own, stuck] = j.jobs;
      assert.equal(own?.note, null, "sim03's task ended on its own");
      const m =
        /^still COMPLETING (\d+) s after its batch script ended: Slurm has not confirmed that the job's processes on sim04 are gone/.exec(
          stuck?.note ?? "",
        );
      assert.ok(m, stuck?.note ?? "no note");
      assert.ok(Number(m[1]) >= 10, m[0]);
      assert.match(stuck?.note ?? "", /\(--completing-grace 10\)$/);
      assert.deepEqual([stuck?.states.at(-1), stuck?.exitCode], ["COMPLETING", 0]);
      assert.deepEqual(j.checks.map((k) => [k.node, k.status]).sort(), [
        ["sim03", "passed"],
        ["sim04", "passed"],
      ]);
    } finally {
      await cli("sim", "fault", "sim04", "--clear", ...fault);
    }
    // The hang ends within a second of the clear: sim04 takes jobs again for the tests after.
    let state = "";
    for (let i = 0; i < 60; i++) {
      state = await c.sh("sim01", "scontrol show node -o sim04 | grep -o 'State=[^ ]*'");
      if (!state.includes("COMPLETING")) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    assert.doesNotMatch(state, /COMPLETING/);
  });

  it("refuses --drain with --via slurm, and a scheduler it does not know (exit 3)", async () => {
    const r = await cli("run", "-i", c.inventoryPath, "--via", "slurm", "--drain");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /--via slurm cannot --drain .*use --reservation/);
    const bad = await cli("run", "-i", c.inventoryPath, "--via", "pbs");
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /--via takes slurm, got 'pbs'/);
  });
  it("the slurm suite from inside a task: refused where devices are confined; else its probe jobs are jobs of their own, the same checks as direct", async () => {
    await applyUnderSlurm(c, "sim01", "all-balanced");
    const sel = ["--nodes", "sim01,sim02", "--suites", "slurm"];
    // ConstrainDevices=yes (the simulated cluster's cgroup.conf): each task would hold all of
    // its node's gres, and the suite's probe jobs could never start beside it.
    const confined = await run("slurm-confined", true, ...sel);
    assert.equal(confined.code, 3, confined.stderr);
    assert.match(confined.stderr, /cannot run the slurm suite here: .*ConstrainDevices=yes/);
    const planted = await cli(
      "sim",
      "fault",
      "sim01",
      "slurm-unconstrained",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(planted.code, 0, planted.stderr);
    let direct: Awaited<ReturnType<typeof run>>;
    let r: Awaited<ReturnType<typeof run>>;
    try {
      direct = await run("slurm-direct", false, ...sel);
      r = await run("slurm-via", true, ...sel);
    } finally {
      await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    }
    // Unconstrained, the suite fails the confinement check, from inside a task as directly.
    assert.equal(direct.code, 1, direct.stderr);
    assert.equal(r.code, 1, `${r.stderr}\n${r.stdout.slice(0, 4000)}`);
    const j = JSON.parse(r.stdout) as ViaJson;
    const d = JSON.parse(direct.stdout) as { checks: Check[] };
    assert.deepEqual(tuples(j.checks), tuples(d.checks));
    assert.ok(
      j.checks.some((k) => k.node === "sim01" && k.code === "TENANT_NOT_CONFINED"),
      j.checks.map((k) => `${k.title}: ${k.status} ${k.code}`).join("\n"),
    );
    // The probe jobs ran from inside the task as jobs of their own: the same three, with the
    // same statuses and codes, as from the controller.
    const probes = (checks: Check[]) =>
      checks
        .filter((k) => k.title.startsWith("probe job on "))
        .map((k) => [k.node, k.title, k.status, k.code].join(" | "))
        .sort();
    assert.equal(probes(j.checks).length, 3, probes(j.checks).join("\n"));
    assert.deepEqual(probes(j.checks), probes(d.checks));
  });
  it("faults via Slurm: refused beside tenants, done inside a reservation where the task's job runs alone", async () => {
    // sim01 carries all-balanced (the test before): one GPU, four instances to fault.
    const iso = [
      "--nodes",
      "sim01",
      "--suites",
      "isolation",
      "--faults",
      "kill",
      "--aggressors",
      "1",
    ];
    const refused = await run("iso-refused", true, ...iso);
    assert.equal(refused.code, 2, refused.stderr);
    const rj = JSON.parse(refused.stdout) as ViaJson;
    const isoChecks = rj.checks.filter((k) => k.suite === "isolation");
    assert.ok(isoChecks.length > 0);
    for (const k of isoChecks) {
      assert.equal(k.status, "broken", k.message);
      assert.match(
        k.message,
        /running this run's job \d+, but no reservation keeps other jobs off the node/,
      );
    }
    await c.sh(
      "sim01",
      "scontrol create reservation ReservationName=maint Nodes=sim01 StartTime=now Duration=30 Users=root Flags=MAINT,IGNORE_JOBS",
    );
    try {
      const r = await run("iso-held", true, ...iso, "--reservation", "maint");
      const j = JSON.parse(r.stdout) as ViaJson;
      const held = j.checks.filter((k) => k.suite === "isolation");
      assert.equal(r.code, 0, held.map((k) => `${k.title}: ${k.status} ${k.message}`).join("\n"));
      assert.ok(
        held.some((k) => k.title.includes("victimsUnaffected")),
        held.map((k) => k.title).join(", "),
      );
      assert.ok(held.every((k) => k.status === "passed"));
      // Someone else's job on the node, inside the same reservation: refused again. Submitted
      // through `slicecheck exec`, which returns once the job runs: the job inherits exec's tags
      // (sbatch's --export=ALL), and exec's watchdog, once its channel closed, killed it with
      // SIGHUP (CI, 5 December 2026: "TaskProlog failed status=1", then a run with no one beside
      // it). Slurm's job is its owner's, not exec's: it must still run.
      const other = (
        await c.sh(
          "sim01",
          "j=$(sbatch --parsable -w sim01 -p mig --reservation=maint -t 2 -o /dev/null --wrap 'sleep 120') && i=0 && until [ \"$(squeue -h -j $j -o %T)\" = RUNNING ] || [ $i -ge 300 ]; do sleep 0.2; i=$((i+1)); done; echo $j",
        )
      ).trim();
      await new Promise((r) => setTimeout(r, 2_000));
      const state = (await c.sh("sim01", `squeue -h -j ${other} -o %T`)).trim();
      assert.match(
        state,
        /^RUNNING/,
        `job ${other}, submitted through exec, after exec ended: ${state}`,
      );
      try {
        const again = await run("iso-shared", true, ...iso, "--reservation", "maint");
        assert.equal(again.code, 2, again.stderr);
        const shared = (JSON.parse(again.stdout) as ViaJson).checks.filter(
          (k) => k.suite === "isolation",
        );
        assert.ok(shared.length > 0);
        for (const k of shared) {
          assert.equal(k.status, "broken");
          assert.match(k.message, new RegExp(`but job\\(s\\) ${other} run there too`));
        }
      } finally {
        await c.sh("sim01", `scancel ${other}`);
      }
    } finally {
      await c.sh("sim01", "scontrol delete reservation=maint");
    }
  });
  it("SIGINT mid-run: the tasks stop their workloads, write their reports, are gathered; exit 130", async () => {
    const out = join(c.dir, "via-int");
    const child = spawn(
      process.execPath,
      [
        "bin/slicecheck.js",
        "run",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim02,sim03",
        "--via",
        "slurm",
        // Stresses of 600 s, longer than this test may take: exit 130 at all means the run
        // stopped them rather than waiting for their end (no clock bound to fail under load).
        "--duration",
        "600",
        // Slurm's own bound on each task (sbatch --time), shown by squeue below.
        "--time-limit",
        "20m",
        "--db",
        server.url,
        "--label",
        "via-int",
        "--out",
        out,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.stdout.resume();
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    // Both tasks' stresses have printed two interval lines: they are mid-workload.
    const intervals = (node: string) => {
      const dir = join(out, node);
      if (!existsSync(dir)) return 0;
      return Math.max(
        0,
        // The task's own --out is <out>/<node>; its logs sit in the node's folder under it.
        ...(readdirSync(dir, { recursive: true }) as string[])
          .filter((f) => f.endsWith(".stress.1.log"))
          .map((f) => (readFileSync(join(dir, f), "utf8").match(/stress t=/g) ?? []).length),
      );
    };
    assert.ok(
      await waitFor(() => intervals("sim02") >= 2 && intervals("sim03") >= 2, 60_000, 200),
      stderr,
    );
    // Each running task carries the time limit it was submitted with (else the partition's:
    // UNLIMITED here).
    const array = /submitted job array (\d+)/.exec(stderr)?.[1];
    const limits = await c.sh("sim01", `squeue -h -r -j ${array} -o %l`).catch(String);
    // Asserted once the run has stopped: a failed check must not leave it running.
    child.kill("SIGINT");
    assert.equal(await exited, 130, stderr);
    assert.deepEqual(limits.trim().split("\n"), ["20:00", "20:00"], stderr);
    assert.match(stderr, /SIGTERM to the running tasks of job array \d+/);
    const via = JSON.parse(readFileSync(join(out, "via-slurm.json"), "utf8")) as {
      interrupted: boolean;
      jobs: { node: string; exitCode: number | null }[];
    };
    assert.equal(via.interrupted, true);
    // Each task ran slicecheck to its own interrupted end, and wrote what it had: the tasks get
    // scancel's SIGTERM, so each exits 143 (128 + SIGTERM), as a direct run stopped that way does.
    assert.deepEqual(
      via.jobs.map((j) => [j.node, j.exitCode]),
      [
        ["sim02", 143],
        ["sim03", 143],
      ],
    );
    const checks = readFileSync(join(out, "checks.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Check);
    const stress = checks.filter((k) => k.suite === "stress");
    assert.deepEqual(stress.map((k) => [k.node, k.status]).sort(), [
      ["sim02", "broken"],
      ["sim03", "broken"],
    ]);
    assert.match(readFileSync(join(out, "measurements.jsonl"), "utf8"), /"metric":"tflops"/);
    assert.ok(existsSync(join(out, "junit.xml")));
    // Nothing of the run is left: no task in Slurm, no process of the run on the nodes.
    const runId = JSON.parse(readFileSync(join(out, "run.json"), "utf8")).runId as string;
    assert.equal((await c.sh("sim01", `squeue -h -n slicecheck-${runId}`)).trim(), "");
    for (const n of ["sim02", "sim03"])
      assert.deepEqual(taggedPids(`SLICECHECK_RUN=${runId}@${n}`), [], n);
  });
});
