// Two runs at once (real sshd, simulated H100s, the real CLI as separate processes) writing to
// one shared PostgreSQL, then `diff` between them by label: the fleet's records path end to end.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import pg from "pg";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { usePostgres } from "../helpers/postgres.js";

function slicecheck(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["bin/slicecheck.js", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  return new Promise((r) => child.on("exit", (code) => r({ code, stderr })));
}

describe("records in a shared PostgreSQL (real server, real sshd, simulated H100 x2)", function () {
  this.timeout(180_000);
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.65.06" },
    { gpu: "H100-80GB", driver: "580.65.06" },
  ]);
  const server = usePostgres();

  it("two concurrent runs land in one database, and diff by label finds the planted regression", async () => {
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim02",
      "--to",
      "580.173.02",
      "--regress",
      "1g.10gb:tflops=0.8",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const run = (node: string, label: string) =>
      slicecheck([
        "run",
        "-i",
        c.inventoryPath,
        "--nodes",
        node,
        "--layout",
        "fixtures/layouts/default.yaml",
        "-c",
        "all-balanced",
        "--duration",
        "2",
        "--label",
        label,
        "--db",
        server.url,
        "--out",
        join(c.dir, label),
      ]);
    const [before, after] = await Promise.all([
      run("sim01", "pg-before"),
      run("sim02", "pg-after"),
    ]);
    assert.equal(before.code, 0, before.stderr);
    // sim02's slowed 1g.10gb instances fall below their share of the GPU.
    assert.equal(after.code, 1, after.stderr);

    const db = new pg.Client({ connectionString: server.url });
    await db.connect();
    const runs = (
      await db.query(
        `SELECT r.label, r.status, r.started, r.finished, count(m.id)::int AS measured
         FROM runs r LEFT JOIN measurements m ON m.run_id = r.id GROUP BY r.id ORDER BY r.label`,
      )
    ).rows as {
      label: string;
      status: string;
      started: string;
      finished: string;
      measured: number;
    }[];
    await db.end();
    assert.deepEqual(
      runs.map((r) => [r.label, r.status]),
      [
        ["pg-after", "failed"],
        ["pg-before", "passed"],
      ],
    );
    assert.ok(
      runs.every((r) => r.measured >= 6),
      "tflops and errors of every instance",
    );
    const [a, b] = runs;
    assert.ok(a && b && a.started < b.finished && b.started < a.finished, "the runs overlapped");

    const diff = await cli(
      "diff",
      "--before",
      "pg-before",
      "--after",
      "pg-after",
      "--db",
      server.url,
      "--json",
    );
    assert.equal(diff.code, 1, diff.stderr);
    const d = JSON.parse(diff.stdout) as {
      before: { kind: string; runs: { node: string; driver: string }[] };
      after: { runs: { node: string; driver: string }[] };
      compared: number;
      findings: { area: string; subject: string; regression: boolean; change: number | null }[];
    };
    assert.equal(d.before.kind, "label");
    assert.deepEqual(
      d.before.runs.map((r) => [r.node, r.driver]),
      [["sim01", "580.65.06"]],
    );
    assert.deepEqual(
      d.after.runs.map((r) => [r.node, r.driver]),
      [["sim02", "580.173.02"]],
    );
    assert.ok(d.compared >= 3, "1g.10gb, 2g.20gb and 3g.40gb compared");
    assert.deepEqual(
      d.findings.map((f) => [f.area, f.subject, f.regression]),
      [["performance", "H100-80GB 1g.10gb stress tflops", true]],
    );
    const change = d.findings[0]?.change ?? 0;
    assert.ok(Math.abs(change + 0.2) < 0.03, `about -20 %, got ${(change * 100).toFixed(1)}%`);
  });
});
