// How the recorder commits to a real PostgreSQL (started by the test as `nobody`): batches with
// synchronous_commit=off, the run's start, settle and finish with the database's own setting
// (read back by triggers, inside the statements themselves), and a server restart between the
// relaxed batches and the run's end reported as incomplete records, not passed over.
import assert from "node:assert/strict";
import pg from "pg";
import { SlicecheckError } from "../../src/errors.js";
import { Recorder } from "../../src/store/recorder.js";
import { openStore } from "../../src/store/store.js";
import type { Measurement } from "../../src/workloads/launcher.js";
import { usePostgres } from "../helpers/postgres.js";

/** One instance's two figures, as a stress run records them. */
function figures(node: string, i: number): Measurement[] {
  return ["tflops", "errors"].map((metric) => ({
    node,
    gpuUuid: "GPU-1",
    instanceUuid: `MIG-${node}-${i}`,
    profile: "1g.10gb",
    placement: `${i}:1`,
    workload: "stress",
    metric,
    value: 1,
    unit: "count",
    repetition: 1,
  }));
}

/** A node's 7 instances, queued together and flushed, as a stress run writes them. */
async function node(rec: Recorder, name: string): Promise<Error | null> {
  for (let i = 0; i < 7; i++) rec.measurements("stress", figures(name, i), "NVIDIA H100 80GB HBM3");
  return rec.flush();
}

// Every row inserted or updated notes the synchronous_commit its transaction commits with:
// deferred triggers run at COMMIT, just before the server decides whether to wait for the flush.
const NOTE_SETTINGS = `
  CREATE TABLE seen (n SERIAL PRIMARY KEY, what TEXT NOT NULL, setting TEXT NOT NULL);
  CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO seen (what, setting) VALUES (TG_TABLE_NAME || ' ' || TG_OP,
      current_setting('synchronous_commit'));
    RETURN NULL;
  END $$;
  CREATE CONSTRAINT TRIGGER note_measurements AFTER INSERT ON measurements
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION note();
  CREATE CONSTRAINT TRIGGER note_runs AFTER INSERT OR UPDATE ON runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION note();`;

describe("store: how PostgreSQL commits the records (real server)", function () {
  this.timeout(90_000);
  const server = usePostgres();
  let n = 0;
  async function sql<T>(url: string, text: string): Promise<T[]> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(text)).rows as T[];
    } finally {
      await c.end();
    }
  }
  /** A database of its own, migrated by a first run. `local`: a setting no default has, so
   * that a durable commit shows it used the database's own, not an `on` of its own. */
  async function freshDb(): Promise<string> {
    const name = `c${++n}_${process.pid}`;
    await sql(server.url, `CREATE DATABASE ${name}`);
    await sql(server.url, `ALTER DATABASE ${name} SET synchronous_commit = local`);
    const url = server.url.replace(/\/postgres$/, `/${name}`);
    const first = await Recorder.start(url, { runId: "schema", argv: [] });
    assert.equal(await first.finish("passed"), null);
    return url;
  }

  it("batches commit with synchronous_commit=off; start, settle and finish with the database's own", async () => {
    const url = await freshDb();
    await sql(url, NOTE_SETTINGS);
    const rec = await Recorder.start(url, { runId: "r1", argv: [] });
    assert.equal(await node(rec, "n1"), null);
    assert.equal(await node(rec, "n2"), null);
    assert.equal(await rec.settle(), null);
    assert.equal(await rec.finish("passed"), null);
    const seen = await sql<{ what: string; setting: string }>(
      url,
      "SELECT what, setting FROM seen ORDER BY n",
    );
    assert.deepEqual(seen, [
      { what: "runs INSERT", setting: "local" },
      ...Array.from({ length: 28 }, () => ({ what: "measurements INSERT", setting: "off" })),
      { what: "runs UPDATE", setting: "local" },
      { what: "runs UPDATE", setting: "local" },
    ]);
    const [run] = await sql<{ status: string }>(url, "SELECT status FROM runs WHERE id = 'r1'");
    assert.equal(run?.status, "passed");
  });

  it("through the store: a relaxed transaction and statement commit with off, durable ones with the database's own", async () => {
    const url = await freshDb();
    await sql(
      url,
      `${NOTE_SETTINGS}
      CREATE TABLE t (x INTEGER NOT NULL);
      CREATE CONSTRAINT TRIGGER note_t AFTER INSERT ON t
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION note();`,
    );
    const store = await openStore(url);
    try {
      const insert = "INSERT INTO t (x) VALUES (?)";
      await store.transaction((tx) => tx.run(insert, [1]), { relaxed: true });
      await store.run(insert, [2], { relaxed: true });
      await store.transaction((tx) => tx.run(insert, [3]));
      await store.run(insert, [4]);
    } finally {
      await store.close();
    }
    const seen = await sql<{ setting: string }>(
      url,
      "SELECT setting FROM seen WHERE what = 't INSERT' ORDER BY n",
    );
    assert.deepEqual(
      seen.map((r) => r.setting),
      ["off", "off", "local", "local"],
    );
  });

  it("prepared statements a pooler lost (as PgBouncer in transaction mode does) are written again unnamed, once", async () => {
    const url = await freshDb();
    await sql(url, "CREATE TABLE t (x INTEGER NOT NULL)");
    const store = await openStore(url);
    try {
      const insert = "INSERT INTO t (x) VALUES (?), (?)";
      await store.run(insert, [1, 2], { relaxed: true });
      // The one idle connection (the pool hands back the last released) forgets what was
      // prepared while pg's client still believes it there: the same text again meets 26000.
      await store.run("DEALLOCATE ALL");
      await store.run(insert, [3, 4], { relaxed: true });
      await store.run(insert, [5, 6], { relaxed: true });
    } finally {
      await store.close();
    }
    const rows = await sql<{ x: number }>(url, "SELECT x FROM t ORDER BY x");
    assert.deepEqual(
      rows.map((r) => r.x),
      [1, 2, 3, 4, 5, 6],
      "each row once",
    );
  });

  it("a server restart after relaxed batches: settle says the records are incomplete, finish does not mark the run finished", async () => {
    const url = await freshDb();
    const rec = await Recorder.start(url, { runId: "r2", argv: [] });
    assert.equal(await node(rec, "n1"), null);
    await server.restart();
    // The pool reconnects to the restarted server: this write succeeds, and nothing but the
    // check would tell that n1's relaxed commit could have been lost in a crash.
    assert.equal(await node(rec, "n2"), null);
    const lost = await rec.settle();
    assert.ok(lost instanceof SlicecheckError, String(lost));
    assert.equal(lost.code, "DB");
    assert.equal(lost.context.restarted, true);
    assert.match(lost.message, /the server restarted during the run .*incomplete/);
    assert.equal(await rec.finish("passed"), lost, "finish reports the same first failure");
    const [run] = await sql<{ status: string; finished: string | null }>(
      url,
      "SELECT status, finished FROM runs WHERE id = 'r2'",
    );
    assert.deepEqual(run, { status: "running", finished: null });
  });
});
