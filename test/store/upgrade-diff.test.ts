// The records end to end (real sshd, simulated H100s): a run SIGKILLed half-way keeps what it
// measured, and diff finds exactly the regression `sim upgrade-driver --regress` planted.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";

interface DiffJson {
  before: { kind: string; runs: { runId: string; driver: string }[] };
  after: { kind: string; runs: { runId: string; driver: string }[] };
  regressions: number;
  compared: number;
  findings: { area: string; subject: string; regression: boolean; change: number | null }[];
}

function count(db: string, sql: string, ...params: unknown[]): number {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return (d.prepare(sql).get(...params) as { n: number }).n;
  } finally {
    d.close();
  }
}

describe("records and diff over a driver upgrade (real sshd, simulated H100 x2)", function () {
  this.timeout(120_000);
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.65.06" },
    { gpu: "H100-80GB", driver: "580.65.06" },
  ]);

  it("records: a run SIGKILLed half-way keeps its run row and the measurements made so far", async () => {
    const db = join(c.dir, "killed.db");
    // One node at a time: sim01's measurements are committed while sim02 still runs.
    const child = spawn(
      process.execPath,
      [
        "bin/slicecheck.js",
        "run",
        "-i",
        c.inventoryPath,
        "--duration",
        "4",
        "--concurrency",
        "1",
        "--db",
        db,
        "--out",
        join(c.dir, "killed"),
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_c, s) => r(s)));
    const measured = () => {
      try {
        return count(db, "SELECT count(*) AS n FROM measurements") > 0;
      } catch {
        return false; // not created yet, or the schema not yet written
      }
    };
    assert.ok(await waitFor(measured, 30_000, 100), "the first node's measurements arrived");
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");
    const d = new Database(db, { readonly: true });
    const runs = d.prepare("SELECT id, status, finished FROM runs").all() as {
      status: string;
      finished: string | null;
    }[];
    const perNode = d
      .prepare("SELECT node, count(*) AS n FROM measurements GROUP BY node")
      .all() as { node: string; n: number }[];
    d.close();
    assert.equal(runs.length, 1);
    assert.equal(runs[0]?.status, "running", "the killed run never finished");
    assert.equal(runs[0]?.finished, null);
    assert.deepEqual(
      perNode.map((p) => p.node),
      ["sim01"],
      "sim01 finished before the kill, sim02 did not",
    );
    assert.ok((perNode[0]?.n ?? 0) >= 2, "tflops and errors of sim01's GPU");
  });

  it("diff: finds exactly the planted regression, by label and by driver; unknown label exits 3", async () => {
    const db = join(c.dir, "upgrade.db");
    const run = (label: string) =>
      cli(
        "run",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim01",
        "--layout",
        "fixtures/layouts/default.yaml",
        "-c",
        "all-balanced",
        "--duration",
        "2",
        "--label",
        label,
        "--db",
        db,
        "--out",
        join(c.dir, label),
        "--json",
      );
    const r1 = await run("before");
    assert.equal(r1.code, 0, r1.stderr);
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.173.02",
      "--regress",
      "1g.10gb:tflops=0.8",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const r2 = await run("after");
    // The stress suite already sees the slowed profile: its instances fall below their share.
    assert.equal(r2.code, 1, r2.stderr);
    const failed = (
      JSON.parse(r2.stdout) as {
        checks: { status: string; code: string; instance: { profile: string } | null }[];
      }
    ).checks.filter((x) => x.status !== "passed");
    assert.deepEqual(
      failed.map((x) => [x.code, x.instance?.profile]),
      [
        ["STRESS_SHARE", "1g.10gb"],
        ["STRESS_SHARE", "1g.10gb"],
      ],
    );
    assert.ok(
      count(db, "SELECT count(*) AS n FROM topology WHERE lgip IS NOT NULL") === 2,
      "the live -lgip/-lgipp catalogue was recorded for both runs",
    );

    const byLabel = await cli(
      "diff",
      "--before",
      "before",
      "--after",
      "after",
      "--db",
      db,
      "--json",
    );
    assert.equal(byLabel.code, 1, byLabel.stderr);
    const d = JSON.parse(byLabel.stdout) as DiffJson;
    assert.equal(d.before.kind, "label");
    assert.ok(d.compared >= 3, "1g.10gb, 2g.20gb and 3g.40gb tflops (and errors) compared");
    // Apply step times are timed once per run: on a loaded machine a step may move by more than
    // the 1 s floor either way (a 'verify step' finding in a CI run of 4 Dec), which is the
    // step comparison's own subject, not this test's.
    assert.deepEqual(
      d.findings
        .filter((f) => !f.subject.endsWith(" step"))
        .map((f) => [f.area, f.subject, f.regression]),
      [
        ["performance", "H100-80GB 1g.10gb stress tflops", true],
        // …and the two 1g.10gb stress checks that flipped to failed (below their share).
        [
          "behaviour",
          "stress | sim01 | 0 | 1g.10gb@2:1 | computes without errors for the whole duration, at its share of the GPU",
          true,
        ],
        [
          "behaviour",
          "stress | sim01 | 0 | 1g.10gb@3:1 | computes without errors for the whole duration, at its share of the GPU",
          true,
        ],
      ],
    );
    const change = d.findings[0]?.change ?? 0;
    assert.ok(Math.abs(change + 0.2) < 0.03, `about -20 %, got ${(change * 100).toFixed(1)}%`);

    const byDriver = await cli(
      "diff",
      "--before",
      "580.65.06",
      "--after",
      "580.173.02",
      "--db",
      db,
    );
    assert.equal(byDriver.code, 1, byDriver.stderr);
    assert.match(byDriver.stdout, /before: 580\.65\.06 \(driver; run sc-/);
    assert.match(
      byDriver.stdout,
      /REGRESSED {2}H100-80GB 1g\.10gb stress tflops: .* -(1[89]|2[0-2])\.\d%/,
    );
    assert.match(byDriver.stdout, /^topology: no change$/m);
    // The same two runs as by label: 3 regressions, and whatever step times moved past the floor.
    const steps = d.findings.filter((f) => f.subject.endsWith(" step"));
    const slower = steps.filter((f) => f.regression).length;
    assert.match(
      byDriver.stdout,
      new RegExp(
        `^${3 + slower} regression\\(s\\), ${steps.length - slower} other change\\(s\\)`,
        "m",
      ),
    );

    const same = await cli("diff", "--before", "before", "--after", "before", "--db", db);
    assert.equal(same.code, 0, same.stdout);

    const unknown = await cli("diff", "--before", "no-such-label", "--after", "after", "--db", db);
    assert.equal(unknown.code, 3);
    assert.match(unknown.stderr, /'no-such-label' is neither a run id, a run label nor a driver/);
  });

  it("upgrade: refuses a driver the catalogue does not know for the node's GPU, touching nothing", async () => {
    const r = await cli(
      "sim",
      "upgrade-driver",
      "sim02",
      "--to",
      "470.42.01",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(r.code, 3);
    assert.match(r.stderr, /driver 470\.42\.01 is not in the catalogue for H100-80GB/);
    const st = await cli("sim", "status", "--inventory", c.inventoryPath, "--json");
    const nodes = (JSON.parse(st.stdout) as { nodes: { name: string; driver: string }[] }).nodes;
    assert.equal(nodes.find((n) => n.name === "sim02")?.driver, "580.65.06");
  });
});
