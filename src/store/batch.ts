// The recorder's writes as rows, written as multi-row INSERTs (SQLite) or with one JSON parameter
// (PostgreSQL), several queued writes in one commit. A PostgreSQL server costs a network round
// trip per statement and a WAL flush per commit: one INSERT per measurement and one transaction
// per instance made it ten times slower than the SQLite file (issue 25). A write stays the unit
// of atomicity: its ops all commit together or not at all, so a kill keeps whole instances,
// never half of one.
import type { Sql, Store, WriteOptions } from "./backend.js";

/** Rows for one table, all with the same columns, inserted as they are (no upsert). */
export interface Rows {
  table: string;
  columns: readonly string[];
  rows: readonly (readonly unknown[])[];
}

/** One op of a write: rows to insert, or statements of its own (an upsert, an update). */
export type Op = Rows | ((tx: Sql) => Promise<void>);

/** One write: everything in it commits together or not at all. */
export type Write = readonly Op[];

/** Bound parameters one SQLite statement may carry: SQLITE_MAX_VARIABLE_NUMBER is 32766 (since
 * 3.32; better-sqlite3 keeps the default). */
export const SQLITE_MAX_PARAMS = 32_766;

/** The INSERT statements for `r`: as few as the parameter limit allows, `?` placeholders. */
export function insertStatements(r: Rows, maxParams: number): { sql: string; params: unknown[] }[] {
  const width = r.columns.length;
  const perStatement = Math.max(1, Math.floor(maxParams / width));
  const tuple = `(${r.columns.map(() => "?").join(", ")})`;
  const out: { sql: string; params: unknown[] }[] = [];
  for (let i = 0; i < r.rows.length; i += perStatement) {
    const chunk = r.rows.slice(i, i + perStatement);
    out.push({
      sql: `INSERT INTO ${r.table} (${r.columns.join(", ")}) VALUES ${chunk.map(() => tuple).join(", ")}`,
      params: chunk.flat(),
    });
  }
  return out;
}

/** A value as JSON keeps it as a bound parameter would: a non-finite number or a bigint becomes
 * the text PostgreSQL reads back as that number (JSON has no NaN, and writes null for it). Done
 * here, not by a replacer: JSON.stringify given one calls it for every key and value and leaves
 * V8's fast path (5.8 ms for 1008 measurements on the controller, against 1.3 ms without). */
function jsonValue(table: string, v: unknown): unknown {
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return v.toString();
  // pg binds an array as a PostgreSQL array literal, JSON as `[…]`: the recorder stringifies
  // what it stores as JSON itself, and a value of another shape is refused, not written apart.
  if (typeof v === "object" && v !== null) throw new Error(`${table}: a row value is not a scalar`);
  return v;
}

/**
 * `r` as one PostgreSQL statement whatever its size: the rows go as one JSON parameter, read
 * with the table's own row type (json_populate_recordset: each value through its column's
 * input function, as a text parameter would be). The statement's text depends on the table
 * and columns only, so the server parses and plans it once per connection (a VALUES list of
 * the batch's size was a new statement for every size, and past 2000 parameters unnamed: 33 ms
 * against 18 ms for 1008 measurements, BENCH=records).
 */
export function jsonRowsStatement(r: Rows): { sql: string; params: unknown[] } {
  const cols = r.columns.join(", ");
  const objects = r.rows.map((row) => {
    const o: Record<string, unknown> = {};
    r.columns.forEach((c, i) => {
      o[c] = jsonValue(r.table, row[i]);
    });
    return o;
  });
  return {
    sql: `INSERT INTO ${r.table} (${cols}) SELECT ${cols} FROM json_populate_recordset(NULL::${r.table}, ?::json)`,
    params: [JSON.stringify(objects)],
  };
}

/** The statements that insert `r` on `kind`. */
export function rowsStatements(kind: Store["kind"], r: Rows): { sql: string; params: unknown[] }[] {
  return kind === "postgres" ? [jsonRowsStatement(r)] : insertStatements(r, SQLITE_MAX_PARAMS);
}

/**
 * The ops of several writes in statement order, with the rows of one table merged: between two
 * ops of their own (which may read or upsert what came before), rows are grouped by table in
 * the order each table first appears. Plain INSERTs into different tables do not depend on one
 * another (every foreign key points at `runs`, written before any of them).
 */
export function mergeOps(ops: readonly Op[]): Op[] {
  const out: Op[] = [];
  let byTable = new Map<string, { table: string; columns: readonly string[]; rows: unknown[][] }>();
  for (const op of ops) {
    if (typeof op === "function") {
      out.push(op);
      byTable = new Map();
      continue;
    }
    if (op.rows.length === 0) continue;
    const key = `${op.table}(${op.columns.join(",")})`;
    let merged = byTable.get(key);
    if (!merged) {
      merged = { table: op.table, columns: op.columns, rows: [] };
      byTable.set(key, merged);
      out.push(merged);
    }
    for (const row of op.rows) merged.rows.push([...row]);
  }
  return out;
}

/** Writes `ops` (already merged) in one transaction; a single statement needs none (a statement
 * is atomic on its own), which saves PostgreSQL two round trips (BEGIN, COMMIT). */
export async function applyOps(
  store: Store,
  ops: readonly Op[],
  o: WriteOptions = {},
): Promise<void> {
  const only = ops.length === 1 ? ops[0] : undefined;
  if (only && typeof only !== "function") {
    const statements = rowsStatements(store.kind, only);
    const [one] = statements;
    if (one && statements.length === 1) return store.run(one.sql, one.params, o);
  }
  await store.transaction(async (tx) => {
    for (const op of ops) {
      if (typeof op === "function") await op(tx);
      else for (const s of rowsStatements(store.kind, op)) await tx.run(s.sql, s.params);
    }
  }, o);
}

/** The rows a commit takes at most from the queue (one write larger than this goes alone, whole):
 * enough to make a fleet's measurements a few commits, few enough that one statement's
 * --db-timeout is never spent on a commit that grew without bound. */
export const GROUP_ROWS = 5_000;

function rowsOf(w: Write): number {
  return w.reduce((n, op) => n + (typeof op === "function" ? 1 : op.rows.length), 0);
}

/** Takes from the front of `pending` the writes of the next commit (at least one). */
export function takeGroup(pending: Write[]): Write[] {
  const group: Write[] = [];
  let rows = 0;
  while (pending.length > 0) {
    const n = rowsOf(pending[0] ?? []);
    if (group.length > 0 && rows + n > GROUP_ROWS) break;
    group.push(pending.shift() ?? []);
    rows += n;
  }
  return group;
}
