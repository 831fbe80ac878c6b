// A shared PostgreSQL that goes away mid-run: the node's checks still stand, but the run says
// its records are incomplete (a broken check, exit 2) instead of passing or crashing.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { usePostgres } from "../helpers/postgres.js";

describe("records: the PostgreSQL server stops mid-run (real server, real sshd)", function () {
  this.timeout(120_000);
  const c = useCluster(1);
  const server = usePostgres();

  it("the run ends broken with 'the run's records are written', naming the database", async () => {
    // The run loads suite files in this process: this one stops the server, then measures.
    (globalThis as Record<string, unknown>).__slicecheckStopPg = () => server.stop();
    const suite = join(c.dir, "stop-db.mjs");
    writeFileSync(
      suite,
      [
        'import { current, forEachNode, harness } from "slicecheck/suite";',
        "const run = harness();",
        'describe("db", () => forEachNode(run.nodes, (node) => {',
        '  it("stops the records database", () => globalThis.__slicecheckStopPg());',
        '  it("measures after", () => current().measure(node.instances[0], "probe", 1, "count"));',
        "}));",
      ].join("\n"),
    );
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      suite,
      "--db",
      server.url,
      "--out",
      join(c.dir, "out"),
      "--json",
    );
    assert.equal(r.code, 2, r.stderr);
    const checks = (
      JSON.parse(r.stdout) as {
        checks: { suite: string; title: string; status: string; message: string }[];
      }
    ).checks;
    assert.deepEqual(
      checks.filter((k) => k.suite !== "run").map((k) => [k.title, k.status]),
      [
        ["stops the records database", "passed"],
        ["measures after", "passed"],
      ],
    );
    const lost = checks.find((k) => k.title === "the run's records are written");
    assert.equal(lost?.status, "broken");
    assert.match(
      lost?.message ?? "",
      /records database postgres:\/\/slicecheck@127\.0\.0\.1:\d+\/postgres: .*failed/,
    );
  });
});
