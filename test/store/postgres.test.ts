// The PostgreSQL backend against a real server (Debian's, started by the test as `nobody`):
// the same schema and migrations as the SQLite file, migrated once by concurrent openers,
// numbers kept at full precision, and clear errors for a bad URL or an unreachable server.
import assert from "node:assert/strict";
import pg from "pg";
import { SlicecheckError } from "../../src/errors.js";
import { snapshot } from "../../src/store/query.js";
import { Recorder } from "../../src/store/recorder.js";
import { SCHEMA_VERSION } from "../../src/store/schema.js";
import { openStore } from "../../src/store/store.js";
import { usePostgres } from "../helpers/postgres.js";

describe("store: PostgreSQL backend (real server)", function () {
  this.timeout(60_000);
  const server = usePostgres();
  let n = 0;
  /** A fresh, empty database on the server for one test. */
  async function freshDb(): Promise<string> {
    const name = `t${++n}_${process.pid}`;
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    return server.url.replace(/\/postgres$/, `/${name}`);
  }
  async function query<T>(url: string, sql: string): Promise<T[]> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  }

  it("five openers of an empty database at once migrate it exactly once, to the SQLite schema", async () => {
    const url = await freshDb();
    const stores = await Promise.all(Array.from({ length: 5 }, () => openStore(url)));
    await Promise.all(stores.map((s) => s.close()));
    const v = await query<{ version: number }>(url, "SELECT version FROM slicecheck_schema");
    assert.deepEqual(v, [{ version: SCHEMA_VERSION }], "one version row, at the current version");
    const tables = await query<{ t: string }>(
      url,
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    assert.deepEqual(
      tables.map((t) => t.t),
      [
        "checks",
        "gpus",
        "measurements",
        "nodes",
        "runs",
        "slicecheck_schema",
        "step_durations",
        "topology",
        "verdicts",
        "xids",
      ],
    );
    const value = await query<{ data_type: string }>(
      url,
      "SELECT data_type FROM information_schema.columns WHERE table_name = 'measurements' AND column_name = 'value'",
    );
    assert.equal(value[0]?.data_type, "double precision", "REAL would be float4 here");
  });

  it("records a run and reads it back by label and driver, at full precision", async () => {
    const url = await freshDb();
    for (const [runId, label, driver] of [
      ["sc-1", "old", "535.183.01"],
      ["sc-2", "new", "580.65.06"],
    ] as const) {
      const rec = await Recorder.start(url, { runId, label, argv: [] });
      rec.node(
        { node: "n1", inventory: { driver, cuda: null, instances: [] }, suites: [], error: null },
        new Map(),
        null,
      );
      // Twice: the upsert must replace the node's row, as INSERT OR REPLACE did.
      rec.node(
        { node: "n1", inventory: { driver, cuda: "12.9", instances: [] }, suites: [], error: null },
        new Map(),
        null,
      );
      rec.measurements(
        "stress",
        [
          {
            node: "n1",
            gpuUuid: "GPU-1",
            instanceUuid: "MIG-1",
            profile: "1g.10gb",
            placement: "0:1",
            workload: "stress",
            metric: "tflops",
            value: 12.345678901234,
            unit: "TFLOP/s",
            repetition: 1,
          },
        ],
        "NVIDIA H100 80GB HBM3",
      );
      assert.equal(await rec.finish("passed"), null);
    }
    const db = await openStore(url, { mustExist: true });
    try {
      const byLabel = await snapshot(db, "new");
      assert.equal(byLabel.kind, "label");
      assert.deepEqual(
        byLabel.picked.map((p) => [p.runId, p.driver, p.status]),
        [["sc-2", "580.65.06", "passed"]],
      );
      assert.equal(byLabel.measurements[0]?.value, 12.345678901234);
      assert.equal((await snapshot(db, "535.183.01")).picked[0]?.runId, "sc-1");
      await assert.rejects(snapshot(db, "nope"), /neither a run id, a run label nor a driver/);
    } finally {
      await db.close();
    }
    const nodes = await query<{ cuda: string }>(
      url,
      "SELECT cuda FROM nodes WHERE run_id = 'sc-1'",
    );
    assert.deepEqual(nodes, [{ cuda: "12.9" }]);
  });

  it("refuses a database of a newer schema, and one with no records when they must exist", async () => {
    const url = await freshDb();
    await assert.rejects(openStore(url, { mustExist: true }), /holds no slicecheck records yet/);
    await (await openStore(url)).close();
    await query(url, `UPDATE slicecheck_schema SET version = ${SCHEMA_VERSION + 1}`);
    await assert.rejects(openStore(url), (e: unknown) => {
      assert.ok(e instanceof SlicecheckError);
      assert.equal(e.code, "USAGE");
      assert.match(e.message, /newer than this slicecheck knows/);
      return true;
    });
  });

  it("a bad URL is bad input; an unreachable server is a DB error that hides the password", async () => {
    await assert.rejects(openStore("postgres://u@127.0.0.1:5/"), /names no database/);
    await assert.rejects(
      openStore("postgres://%zz"),
      /not a valid URL|names no|bad percent-encoding/,
    );
    // Port 1: nothing listens there, so the connection is refused at once.
    await assert.rejects(openStore("postgres://u:secret@127.0.0.1:1/x"), (e: unknown) => {
      assert.ok(e instanceof SlicecheckError);
      assert.equal(e.code, "DB");
      assert.match(e.message, /ECONNREFUSED/);
      assert.doesNotMatch(e.message, /secret/);
      assert.match(e.message, /u:\*\*\*@127\.0\.0\.1:1\/x/);
      return true;
    });
  });
});
