// The SQLite backend of the store: better-sqlite3 is synchronous, so every call is answered at
// once; a queue still orders them, so that an asynchronous transaction (BEGIN … await … COMMIT)
// never has another caller's statement land inside it.

import { dbTimeoutError, type OpenOptions, type Sql, type Store } from "./backend.js";
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
    run: (sql, params) => serial(() => direct.run(sql, params)),
    transaction: (fn) =>
      serial(async () => {
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
    close: () =>
      serial(async () => {
        if (db.open) db.close();
      }),
  };
}
