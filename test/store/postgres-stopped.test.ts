// A shared PostgreSQL that stops answering mid-run (SIGSTOP of the postmaster and every backend:
// TCP stays open, nothing is refused, nothing answers): the run must not wait for it. Within its
// --db-timeout it reports the records as lost (a broken check naming the database and the
// timeout, exit 2) and exits, without hanging on the last commit or on closing the pool.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import pg from "pg";
import { cli, runArgs } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { usePostgres } from "../helpers/postgres.js";

/** The postmaster and its children (backends, checkpointer, walwriter …). */
function serverPids(postmaster: number): number[] {
  const kids = execFileSync("ps", ["-o", "pid=", "--ppid", String(postmaster)], {
    encoding: "utf8",
  }).trim();
  return [postmaster, ...kids.split(/\s+/).filter(Boolean).map(Number)];
}

function signalAll(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const p of pids)
    try {
      process.kill(p, sig);
    } catch {
      /* a backend that exited meanwhile */
    }
}

describe("records: the PostgreSQL server is SIGSTOPped mid-stress (real server, real sshd)", function () {
  // The old code waited for as long as the server was stopped: this timeout is what it hit.
  this.timeout(120_000);
  const c = useCluster(1);
  const server = usePostgres();
  let stopped: number[] = [];
  afterEach(() => {
    // Nothing stays stopped, whatever the test did (the `after` of usePostgres stops it).
    signalAll(stopped, "SIGCONT");
    stopped = [];
  });

  it("exits 2 within --db-timeout with the records reported lost, naming the database and the timeout", async () => {
    const run = cli(
      ...runArgs(c, "stopped", {
        suites: "stress",
        duration: 8,
        db: server.url,
        json: true,
        extra: ["--db-timeout", "5"],
      }),
    );
    // The node's row is written just before the suites start: 2 s after it, stop the server.
    const probe = new pg.Client({ connectionString: server.url });
    await probe.connect();
    try {
      for (;;) {
        const t = await probe.query("SELECT to_regclass('nodes') AS t");
        if (
          t.rows[0]?.t &&
          Number((await probe.query("SELECT count(*) AS n FROM nodes")).rows[0]?.n) > 0
        )
          break;
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await probe.end();
    }
    await new Promise((r) => setTimeout(r, 2000));
    stopped = serverPids(server.pid);
    signalAll(stopped, "SIGSTOP");
    const r = await run;
    assert.equal(r.code, 2, r.stderr);
    const checks = (
      JSON.parse(r.stdout) as {
        checks: { suite: string; title: string; status: string; message: string }[];
      }
    ).checks;
    // The node's own checks are untouched by the database: none is failed.
    assert.deepEqual(
      checks.filter((k) => k.status === "failed"),
      [],
    );
    const lost = checks.find((k) => k.title === "the run's records are written");
    assert.equal(lost?.status, "broken", JSON.stringify(checks, null, 1));
    assert.match(
      lost?.message ?? "",
      /records database postgres:\/\/slicecheck@127\.0\.0\.1:\d+\/postgres: .*no answer within 5 s \(--db-timeout\)/,
    );
  });
});
