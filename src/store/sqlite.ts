// The SQLite backend of the store: better-sqlite3 is synchronous, so every call is answered at
// once; a queue still orders them, so that an asynchronous transaction (BEGIN … await … COMMIT)
// never has another caller's statement land inside it.

import {
  dbTimeoutError,
  type OpenOptions,
  type Sql,
  type Store,
  type WriteOptions,
} from "./backend.js";
import { openDb, SQLITE_BUSY_CAP_MS } from "./db.js";

export function openSqlite(path: string, o: OpenOptions = {}): Store {
  const db = openDb(path, o);
  const busyMs = Math.min(o.timeoutMs ?? SQLITE_BUSY_CAP_MS, SQLITE_BUSY_CAP_MS);
  // Another writer held the file's lock past the busy timeout: the same lost record as a
  // database server that does not answer, named the same way.
  const busy = (e: unknown): unknown =>
    (e as { code?: unknown }).code === "SQLITE_BUSY"
      ? dbTimeoutError(
          path,
          "a write",
          busyMs,
          e,
          "WRITE",
          "another process holds the file's write lock; this run's records there are incomplete",
        )
      : e;
  const direct: Sql = {
    all: async <T>(sql: string, params: readonly unknown[] = []) =>
      db.prepare(sql).all(...params) as T[],
    get: async <T>(sql: string, params: readonly unknown[] = []) =>
      db.prepare(sql).get(...params) as T | undefined,
    run: async (sql: string, params: readonly unknown[] = []) => {
      db.prepare(sql).run(...params);
    },
  };
  // The file runs synchronous=NORMAL (db.ts): a commit survives the controller's death, not the
  // machine's power loss. A durable write syncs the WAL at its commit (FULL), which takes every
  // earlier commit with it; the setting is the connection's (changed outside a transaction
  // only, SQLite refuses it inside one), put back after.
  const durably = async <T>(o: WriteOptions | undefined, fn: () => Promise<T>): Promise<T> => {
    if (o?.relaxed) return fn();
    const was = db.pragma("synchronous", { simple: true }) as number;
    db.pragma("synchronous = FULL");
    try {
      return await fn();
    } finally {
      db.pragma(`synchronous = ${was}`);
    }
  };
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => {});
    return next;
  };
  return {
    kind: "sqlite",
    location: path,
    all: (sql, params) => serial(() => direct.all(sql, params)),
    get: (sql, params) => serial(() => direct.get(sql, params)),
    run: (sql, params, o) => serial(() => durably(o, () => direct.run(sql, params))),
    transaction: (fn, o) =>
      serial(() =>
        durably(o, async () => {
          try {
            db.exec("BEGIN IMMEDIATE");
          } catch (e) {
            throw busy(e);
          }
          try {
            const r = await fn(direct);
            db.exec("COMMIT");
            return r;
          } catch (e) {
            if (db.inTransaction) db.exec("ROLLBACK");
            throw busy(e);
          }
        }),
      ),
    close: () =>
      serial(async () => {
        if (db.open) db.close();
      }),
  };
}
