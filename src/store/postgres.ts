// The PostgreSQL backend of the store: one shared database for a fleet's runs (`--db
// postgres://…`). Same schema and migrations as the SQLite file; the version lives in a table
// of its own, and migrations take an advisory lock so that the many runs of a fleet starting
// at once against an empty database migrate it exactly once.
import pg from "pg";
import { SlicecheckError } from "../errors.js";
import { MIGRATIONS, migrationSql, numberedParams, SCHEMA_VERSION } from "./schema.js";
import { redactUrl, type Sql, type Store } from "./store.js";

// Any constant: the key of the advisory lock that serialises slicecheck's migrations.
const MIGRATION_LOCK = 5_110_514;

function dbError(location: string, e: unknown, doing: string): SlicecheckError {
  if (e instanceof SlicecheckError) return e;
  const code = (e as { code?: unknown }).code;
  const msg = e instanceof Error ? e.message : String(e);
  return new SlicecheckError(
    "DB",
    `records database ${location}: ${doing} failed: ${typeof code === "string" ? `${code}: ` : ""}${msg}; check that PostgreSQL is running there and that the URL's user may create tables in that database`,
    { location, cause: code },
    { cause: e },
  );
}

function sqlOf(q: pg.Pool | pg.PoolClient): Sql {
  return {
    all: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await q.query(numberedParams(sql), [...params])).rows as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await q.query(numberedParams(sql), [...params])).rows[0] as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []) => {
      await q.query(numberedParams(sql), [...params]);
    },
  };
}

async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client whose server goes away emits 'error' (the pool's handler covers idle
  // ones only): unheard, that is an uncaught exception that ends the controller. The query in
  // flight rejects as well, which is what the recorder reports.
  const onError = () => {};
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    const r = await fn(client);
    await client.query("COMMIT");
    return r;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    client.off("error", onError);
    client.release();
  }
}

/** One transaction per step, version bump inside it, under the lock; returns the version found. */
async function migrate(pool: pg.Pool, location: string, mustExist: boolean): Promise<number> {
  const found = await inTransaction(pool, async (c) => {
    const t = await c.query("SELECT to_regclass('slicecheck_schema') AS t");
    if (t.rows[0]?.t === null) return null;
    return (await c.query("SELECT version FROM slicecheck_schema")).rows[0]?.version as number;
  });
  if (found === null && mustExist)
    throw new SlicecheckError(
      "USAGE",
      `records database ${location} holds no slicecheck records yet; run \`slicecheck run --db <the same URL>\` first`,
      { location },
    );
  if ((found ?? 0) > SCHEMA_VERSION)
    throw new SlicecheckError(
      "USAGE",
      `${location} has schema version ${found}, newer than this slicecheck knows (${SCHEMA_VERSION}); upgrade slicecheck`,
      { location, version: found },
    );
  for (;;) {
    const done = await inTransaction(pool, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await c.query("CREATE TABLE IF NOT EXISTS slicecheck_schema (version INTEGER NOT NULL)");
      const row = (await c.query("SELECT version FROM slicecheck_schema")).rows[0];
      if (!row) await c.query("INSERT INTO slicecheck_schema (version) VALUES (0)");
      const at = (row?.version as number | undefined) ?? 0;
      if (at >= SCHEMA_VERSION) return true;
      await c.query(migrationSql(MIGRATIONS[at] ?? "", "postgres"));
      await c.query("UPDATE slicecheck_schema SET version = $1", [at + 1]);
      return false;
    });
    if (done) return found ?? 0;
  }
}

export async function openPostgres(url: string, o: { mustExist?: boolean } = {}): Promise<Store> {
  const location = redactUrl(url);
  // A few connections: the recorder writes one transaction at a time; readers (regression,
  // diff) take another. connectionTimeoutMillis: a wrong host fails in seconds, not minutes.
  const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 10_000 });
  // An idle connection the server drops must not crash the run: the next query reconnects.
  pool.on("error", () => {});
  try {
    await migrate(pool, location, o.mustExist ?? false);
  } catch (e) {
    await pool.end().catch(() => {});
    throw dbError(location, e, "opening");
  }
  const direct = sqlOf(pool);
  const guard = async <R>(doing: string, p: Promise<R>): Promise<R> => {
    try {
      return await p;
    } catch (e) {
      throw dbError(location, e, doing);
    }
  };
  return {
    kind: "postgres",
    location,
    all: <T>(sql: string, params?: readonly unknown[]) =>
      guard("a read", direct.all<T>(sql, params)),
    get: <T>(sql: string, params?: readonly unknown[]) =>
      guard("a read", direct.get<T>(sql, params)),
    run: (sql, params) => guard("a write", direct.run(sql, params)),
    transaction: (fn) =>
      guard(
        "a transaction",
        inTransaction(pool, (c) => fn(sqlOf(c))),
      ),
    close: () => pool.end(),
  };
}
