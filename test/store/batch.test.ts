// The recorder's batching on its own: INSERTs cut under a parameter limit, rows of one table
// merged across writes without crossing an upsert, and a commit's share of the queue bounded.
// A real SQLite file shows a group that meets a bad write keeps every other write whole.
import assert from "node:assert/strict";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  GROUP_ROWS,
  insertStatements,
  jsonRowsStatement,
  mergeOps,
  type Op,
  type Rows,
  takeGroup,
  type Write,
} from "../../src/store/batch.js";
import { Recorder } from "../../src/store/recorder.js";
import type { Measurement } from "../../src/workloads/launcher.js";
import { tempDir } from "../helpers/tmp.js";

const rows = (table: string, n: number, from = 0): Rows => ({
  table,
  columns: ["a", "b", "c"],
  rows: Array.from({ length: n }, (_, i) => [from + i, `b${from + i}`, null]),
});

function figures(instance: string, n: number, node = "n1"): Measurement[] {
  return Array.from({ length: n }, (_, i) => ({
    node,
    gpuUuid: "GPU-1",
    instanceUuid: instance,
    profile: "1g.10gb",
    placement: "0:1",
    workload: "stress",
    metric: `m${i}`,
    value: i + 0.5,
    unit: "count",
    repetition: 1,
  }));
}

describe("store: batched writes", () => {
  it("cuts an INSERT into as few statements as the parameter limit allows, every row once", () => {
    // 10 parameters at most: 3 rows of 3 columns per statement.
    const s = insertStatements(rows("t", 7), 10);
    assert.deepEqual(
      s.map((x) => x.params.length),
      [9, 9, 3],
    );
    assert.equal(s[0]?.sql, "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)");
    assert.deepEqual(
      s.flatMap((x) => x.params).filter((_, i) => i % 3 === 0),
      [0, 1, 2, 3, 4, 5, 6],
    );
    for (const x of s) assert.equal(x.params.length, (x.sql.match(/\?/g) ?? []).length);
  });

  it("gives PostgreSQL a table's rows as one JSON parameter of scalars, and refuses any other value", () => {
    const s = jsonRowsStatement(rows("t", 2));
    assert.equal(
      s.sql,
      "INSERT INTO t (a, b, c) SELECT a, b, c FROM json_populate_recordset(NULL::t, ?::json)",
    );
    assert.deepEqual(JSON.parse(String(s.params[0])), [
      { a: 0, b: "b0", c: null },
      { a: 1, b: "b1", c: null },
    ]);
    // An array would be a PostgreSQL array literal as a bound parameter, `[…]` in JSON.
    const odd: Rows = { table: "t", columns: ["a"], rows: [[1], [[1, 2]]] };
    assert.throws(() => jsonRowsStatement(odd), /t: a row value is not a scalar/);
  });

  it("merges rows of one table across writes in order, but never across an op of its own", () => {
    const upsert: Op = async () => {};
    const merged = mergeOps([
      rows("m", 2, 0),
      rows("c", 1, 0),
      rows("m", 2, 2),
      upsert,
      rows("m", 1, 4),
    ]);
    assert.equal(merged.length, 4);
    const [m, c, fn, after] = merged as [Rows, Rows, Op, Rows];
    assert.deepEqual(
      m.rows.map((r) => r[0]),
      [0, 1, 2, 3],
    );
    assert.equal(c.table, "c");
    assert.equal(fn, upsert, "the upsert stays where it was");
    assert.deepEqual(
      after.rows.map((r) => r[0]),
      [4],
      "rows after an upsert are not moved before it",
    );
  });

  it("a commit takes whole writes up to GROUP_ROWS rows; a larger write goes alone, whole", () => {
    const w = (n: number): Write => [rows("m", n)];
    const big = w(GROUP_ROWS + 1);
    const pending: Write[] = [w(GROUP_ROWS - 10), w(10), w(1), big, w(1)];
    assert.equal(takeGroup(pending).length, 2, "exactly GROUP_ROWS rows fit");
    assert.equal(takeGroup(pending).length, 1, "the next row would exceed the bound");
    assert.deepEqual(takeGroup(pending), [big]);
    assert.equal(takeGroup(pending).length, 1);
    assert.equal(pending.length, 0);
  });

  it("SQLite: instances queued together share a commit, and a bad one loses only itself", async () => {
    const db = join(tempDir("batch"), "r.db");
    const rec = await Recorder.start(db, { runId: "r1", argv: [] });
    for (const i of ["MIG-a", "MIG-b", "MIG-c"])
      rec.measurements("stress", figures(i, 2), "NVIDIA H100 80GB HBM3");
    assert.equal(await rec.flush(), null);
    assert.deepEqual(rec.stats, { writes: 3, commits: 1, ms: rec.stats.ms }, "one commit");
    rec.measurements("stress", figures("MIG-1", 3), "NVIDIA H100 80GB HBM3");
    // node is NOT NULL: this instance's INSERT fails, and with it the shared commit's.
    rec.measurements("stress", figures("MIG-2", 3, null as unknown as string), "x");
    rec.measurements("stress", figures("MIG-3", 3), "NVIDIA H100 80GB HBM3");
    const err = await rec.flush();
    assert.match(String(err), /NOT NULL/);
    assert.equal(await rec.finish("passed"), err, "the first failure is what finish reports");
    const d = new Database(db, { readonly: true });
    const per = d
      .prepare("SELECT instance_uuid AS i, count(*) AS n FROM measurements GROUP BY 1 ORDER BY 1")
      .all();
    const status = d.prepare("SELECT status FROM runs").get();
    d.close();
    assert.deepEqual(per, [
      { i: "MIG-1", n: 3 },
      { i: "MIG-3", n: 3 },
      { i: "MIG-a", n: 2 },
      { i: "MIG-b", n: 2 },
      { i: "MIG-c", n: 2 },
    ]);
    assert.deepEqual(status, { status: "passed" });
    assert.equal(rec.stats.writes, 6, "five instances and the finish");
  });
});
