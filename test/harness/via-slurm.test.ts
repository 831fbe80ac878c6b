// run --via slurm on a real Slurm: one batch job per node runs slicecheck there, every job
// writes to one shared PostgreSQL, the controller shows the jobs' states and gathers one result.
import assert from "node:assert/strict";
import { join } from "node:path";
import pg from "pg";
import { cli } from "../helpers/cli.js";
import { usePostgres } from "../helpers/postgres.js";
import { useSlurmCluster } from "../helpers/slurm-cluster.js";

interface ViaJson {
  exitCode: number;
  jobs: { node: string; jobId: string; states: string[]; exitCode: number | null }[];
  checks: { node: string; status: string }[];
}

describe("run --via slurm (real Slurm 22.05, real PostgreSQL, simulated H100 x2)", function () {
  this.timeout(240_000);
  const c = useSlurmCluster(2);
  const server = usePostgres();
  const via = (label: string) =>
    cli(
      "run",
      "-i",
      c.inventoryPath,
      "--via",
      "slurm",
      "--suites",
      "stress",
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

  it("runs one job per node through the scheduler, both recorded in the shared database", async () => {
    const r = await via("via-ok");
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as ViaJson;
    assert.deepEqual(
      j.jobs.map((x) => [x.node, x.states.includes("RUNNING"), x.states.at(-1), x.exitCode]),
      [
        ["sim01", true, "ENDED", 0],
        ["sim02", true, "ENDED", 0],
      ],
    );
    assert.notEqual(j.jobs[0]?.jobId, j.jobs[1]?.jobId);
    assert.deepEqual([...new Set(j.checks.map((k) => k.node))].sort(), ["sim01", "sim02"]);
    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    const rows = (
      await db.query(
        "SELECT n.node, r.id, r.status FROM runs r JOIN nodes n ON n.run_id = r.id WHERE r.label = 'via-ok' ORDER BY n.node",
      )
    ).rows;
    await db.end();
    // One run across the jobs: diff by its label or id sees every node.
    const runId = JSON.parse(r.stdout).runId as string;
    assert.deepEqual(rows, [
      { node: "sim01", id: runId, status: "passed" },
      { node: "sim02", id: runId, status: "passed" },
    ]);
  });

  it("a node whose checks fail makes the gathered run fail; the other node's job still passes", async () => {
    const f = await cli("sim", "fault", "sim02", "gpu-lost", "--inventory", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    const r = await via("via-bad");
    assert.notEqual(r.code, 0);
    const j = JSON.parse(r.stdout) as ViaJson;
    assert.equal(j.exitCode, r.code);
    assert.deepEqual(
      j.jobs.map((x) => [x.node, x.exitCode === 0]),
      [
        ["sim01", true],
        ["sim02", false],
      ],
    );
    assert.ok(j.checks.some((k) => k.node === "sim02" && k.status !== "passed"));
    // The run's status is its worst job's, whichever finished last.
    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    const { rows } = await db.query("SELECT status FROM runs WHERE label = 'via-bad'");
    await db.end();
    assert.deepEqual(rows, [{ status: j.exitCode === 1 ? "failed" : "broken" }]);
  });

  it("refuses --drain with --via slurm, and a scheduler it does not know (exit 3)", async () => {
    const r = await cli("run", "-i", c.inventoryPath, "--via", "slurm", "--drain");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /--via slurm cannot --drain .*use --reservation/);
    const bad = await cli("run", "-i", c.inventoryPath, "--via", "pbs");
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /--via takes slurm, got 'pbs'/);
  });
});
