// The PostgreSQL backend of the store: one shared database for a fleet's runs (`--db
// postgres://…`). Same schema and migrations as the SQLite file; the version lives in a table
// of its own, and migrations take an advisory lock so that the many runs of a fleet starting
// at once against an empty database migrate it exactly once.
import pg from "pg";
import { SlicecheckError } from "../errors.js";
import { settledWithin } from "../util/time.js";
import {
  dbTimeoutError,
  isDbTimeout,
  type OpenOptions,
  redactUrl,
  type Sql,
  type Store,
  type WriteOptions,
} from "./backend.js";
import {
  preparedLost,
  RELAX_TRANSACTION,
  RelaxedCommits,
  relaxedStatement,
  writeStatement,
} from "./pg-commit.js";
import { MIGRATIONS, migrationSql, numberedParams, SCHEMA_VERSION } from "./schema.js";

// Any constant: the key of the advisory lock that serialises slicecheck's migrations.
const MIGRATION_LOCK = 5_110_514;

/** pg's own timeouts: query_timeout (client side), the pool's and the connection's
 * connectionTimeoutMillis, and the server's statement_timeout (57014). */
function timedOut(e: unknown): boolean {
  const msg = e instanceof Error ? e.message : "";
  return (
    (e as { code?: unknown }).code === "57014" ||
    /Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout|timeout expired/.test(
      msg,
    )
  );
}

function dbError(location: string, e: unknown, doing: string, timeoutMs: number): SlicecheckError {
  if (e instanceof SlicecheckError) return e;
  if (timedOut(e))
    return dbTimeoutError(
      location,
      doing,
      timeoutMs,
      e,
      "DB",
      "the server is stopped, overloaded or unreachable; this run's records there are incomplete",
    );
  const code = (e as { code?: unknown }).code;
  const msg = e instanceof Error ? e.message : String(e);
  return new SlicecheckError(
    "DB",
    `records database ${location}: ${doing} failed: ${typeof code === "string" ? `${code}: ` : ""}${msg}; check that PostgreSQL is running there and that the URL's user may create tables in that database`,
    { location, cause: code },
    { cause: e },
  );
}

/** `named`: whether writes go as prepared statements (pg-commit.ts writeStatement). */
function sqlOf(q: pg.Pool | pg.PoolClient, named: () => boolean = () => false): Sql {
  return {
    all: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await q.query(numberedParams(sql), [...params])).rows as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await q.query(numberedParams(sql), [...params])).rows[0] as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []) => {
      await q.query(writeStatement(sql, params, named()));
    },
  };
}

/**
 * Closes a client's socket at once. A stopped server (SIGSTOP, a frozen VM) leaves TCP open and
 * never answers pg's goodbye, so client.end() and pool.end() would wait for as long as it stays
 * stopped; pg has no public destroy, hence its connection's stream.
 */
function destroy(client: pg.ClientBase): void {
  (
    client as unknown as { connection?: { stream?: { destroy(): void } } }
  ).connection?.stream?.destroy();
}

/** `fn` on a client of its own. After a client-side timeout the connection still has the query
 * in flight: it cannot be reused, and dropping it rolls back on the server. */
async function withClient<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await fn(client);
  } catch (e) {
    if (timedOut(e)) broken = e instanceof Error ? e : new Error(String(e));
    throw e;
  } finally {
    client.release(broken);
    if (broken) destroy(client);
  }
}

async function transactionOn<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    const r = await fn();
    await client.query("COMMIT");
    return r;
  } catch (e) {
    // A ROLLBACK after a timeout would only wait as long again (withClient drops the client).
    if (!timedOut(e)) await client.query("ROLLBACK").catch(() => {});
    throw e;
  }
}

async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, (c) => transactionOn(c, () => fn(c)));
}

/** A write: one statement, or statements that commit together. */
type Write<T> = { sql: string; params: readonly unknown[] } | ((tx: Sql) => Promise<T>);

/**
 * Writes, relaxed or durable as `o` asks (pg-commit.ts). A relaxed single statement relaxes its
 * own commit (one round trip); anything else is a transaction, opened by the relaxing statement
 * or, for a durable write after relaxed ones, by the check that the server did not restart
 * meanwhile. Writes go as prepared statements until a pooler shows it loses them; the write
 * that showed it (which did not run: Parse and Bind come before anything executes, and its
 * transaction rolled back) is written again unnamed.
 */
function writer(pool: pg.Pool, location: string) {
  const relaxedCommits = new RelaxedCommits();
  let named = true;
  const once = <T>(o: WriteOptions | undefined, w: Write<T>): Promise<T> =>
    withClient(pool, async (c) => {
      const relaxed = o?.relaxed ?? false;
      const check = !relaxed && relaxedCommits.pending;
      const alone =
        typeof w === "function" || check ? null : relaxed ? relaxedStatement(w.sql) : w.sql;
      if (alone !== null && typeof w !== "function") {
        const r = await c.query(writeStatement(alone, w.params, named));
        if (relaxed) relaxedCommits.committed(r.rows[0]?.up);
        return undefined as T;
      }
      let up: unknown;
      const r = await transactionOn(c, async () => {
        if (relaxed) up = (await c.query(RELAX_TRANSACTION)).rows[0]?.up;
        if (check) await relaxedCommits.check(c, location);
        const tx = sqlOf(c, () => named);
        if (typeof w === "function") return w(tx);
        await tx.run(w.sql, w.params);
        return undefined as T;
      });
      if (relaxed) relaxedCommits.committed(up);
      else relaxedCommits.settled();
      return r;
    });
  return async <T>(o: WriteOptions | undefined, w: Write<T>): Promise<T> => {
    try {
      return await once(o, w);
    } catch (e) {
      if (!named || !preparedLost(e)) throw e;
      named = false;
      return once(o, w);
    }
  };
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

/** Ends the pool, but waits at most `ms` (0 after a timeout: the server is not answering), then
 * closes every socket still open, so that nothing keeps the controller alive. */
async function endPool(pool: pg.Pool, clients: Set<pg.ClientBase>, ms: number): Promise<void> {
  await settledWithin(pool.end(), ms);
  for (const c of clients) destroy(c);
}

export async function openPostgres(url: string, o: OpenOptions = {}): Promise<Store> {
  const location = redactUrl(url);
  const timeoutMs = o.timeoutMs ?? 30_000;
  // A few connections: the recorder writes one transaction at a time; readers (regression,
  // diff) take another. Every wait is bounded by pg's own options: connectionTimeoutMillis
  // (a wrong host, a server that accepts TCP but never answers, a full pool), query_timeout
  // (client side: the only one that catches a stopped server, whose TCP stays open) and
  // statement_timeout (server side: a statement stuck behind a lock).
  const pool = new pg.Pool({
    connectionString: url,
    max: 4,
    // A wrong host still fails in seconds, not minutes, whatever the timeout.
    connectionTimeoutMillis: Math.min(timeoutMs, 10_000),
    query_timeout: timeoutMs,
    statement_timeout: timeoutMs,
  });
  // An idle connection the server drops must not crash the run: the next query reconnects.
  pool.on("error", () => {});
  const clients = new Set<pg.ClientBase>();
  pool.on("connect", (c) => {
    clients.add(c);
    // A checked-out client whose server goes away emits 'error' (the pool's handler covers
    // idle ones only): unheard, that is an uncaught exception that ends the controller. The
    // query in flight rejects as well, which is what the recorder reports.
    c.on("error", () => {});
    c.once("end", () => clients.delete(c));
  });
  let answering = true;
  const guard = async <R>(doing: string, p: Promise<R>): Promise<R> => {
    try {
      return await p;
    } catch (e) {
      const err = dbError(location, e, doing, timeoutMs);
      if (isDbTimeout(err)) answering = false;
      throw err;
    }
  };
  await guard("opening", migrate(pool, location, o.mustExist ?? false)).catch(async (e) => {
    await endPool(pool, clients, answering ? timeoutMs : 0);
    throw e;
  });
  const direct = sqlOf(pool);
  const write = writer(pool, location);
  return {
    kind: "postgres",
    location,
    all: <T>(sql: string, params?: readonly unknown[]) =>
      guard("a read", direct.all<T>(sql, params)),
    get: <T>(sql: string, params?: readonly unknown[]) =>
      guard("a read", direct.get<T>(sql, params)),
    run: (sql, params = [], o) => guard("a write", write(o, { sql, params })),
    transaction: (fn, o) => guard("a transaction", write(o, fn)),
    close: () => endPool(pool, clients, answering ? timeoutMs : 0),
  };
}
