// The SQLite backend of the store: better-sqlite3 is synchronous, so every call is answered at
// once; a queue still orders them, so that an asynchronous transaction (BEGIN … await … COMMIT)
// never has another caller's statement land inside it.
import { openDb } from "./db.js";
import type { Sql, Store } from "./store.js";

export function openSqlite(path: string, o: { mustExist?: boolean } = {}): Store {
  const db = openDb(path, o);
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
        db.exec("BEGIN IMMEDIATE");
        try {
          const r = await fn(direct);
          db.exec("COMMIT");
          return r;
        } catch (e) {
          if (db.inTransaction) db.exec("ROLLBACK");
          throw e;
        }
      }),
    close: () =>
      serial(async () => {
        if (db.open) db.close();
      }),
  };
}
