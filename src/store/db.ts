// The SQLite backend's file: one SQLite file (reports/slicecheck.db by default) that keeps every
// run, so that `slicecheck diff` can compare a run before a driver upgrade with one after it.
// (A `postgres://` --db goes to postgres.ts instead; store.ts picks.)
// WAL mode, and every write in its own small transaction, so a run killed half-way keeps what
// it had measured and a concurrent reader (diff during a run) never blocks the writer.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { SlicecheckError } from "../errors.js";
import { MIGRATIONS, migrationSql, SCHEMA_VERSION } from "./schema.js";

export { SCHEMA_VERSION } from "./schema.js";

export type Db = Database;

export const DEFAULT_DB = "reports/slicecheck.db";

/** `--db`, then $SLICECHECK_DB, then the default: a file path or a `postgres://` URL. */
export function dbPath(flag?: string): string {
  return flag ?? process.env.SLICECHECK_DB ?? DEFAULT_DB;
}

/** Brings the file to SCHEMA_VERSION; refuses a file written by a newer slicecheck. */
export function migrate(db: Database, path = "the database"): number {
  const at = db.pragma("user_version", { simple: true }) as number;
  if (at > SCHEMA_VERSION) {
    throw new SlicecheckError(
      "USAGE",
      `${path} has schema version ${at}, newer than this slicecheck knows (${SCHEMA_VERSION}); upgrade slicecheck`,
      { path, version: at },
    );
  }
  for (let v = at; v < SCHEMA_VERSION; v++) {
    // One transaction per step, with the version bump inside it: a crash mid-migration leaves
    // the file at the last complete version.
    db.transaction(() => {
      db.exec(migrationSql(MIGRATIONS[v] ?? "", "sqlite"));
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return at;
}

/** SQLite's busy timeout: how long a write waits for another writer's lock. better-sqlite3
 * waits synchronously, blocking the controller (heartbeats, sessions) meanwhile, so --db-timeout
 * is capped here at the 10 s it always was. */
export const SQLITE_BUSY_CAP_MS = 10_000;

export function openDb(
  path: string,
  o: { mustExist?: boolean; timeoutMs?: number } = {},
): Database {
  const timeout = Math.min(o.timeoutMs ?? SQLITE_BUSY_CAP_MS, SQLITE_BUSY_CAP_MS);
  if (o.mustExist) {
    try {
      const db = new Database(path, { fileMustExist: true, timeout });
      db.pragma("journal_mode = WAL");
      migrate(db, path);
      return db;
    } catch (e) {
      if (e instanceof SlicecheckError) throw e;
      throw new SlicecheckError(
        "USAGE",
        `cannot open the records database ${path}: ${e instanceof Error ? e.message : String(e)}; run \`slicecheck run\` first or give --db`,
        { path },
      );
    }
  }
  let db: Database | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true });
    db = new Database(path, { timeout });
    db.pragma("journal_mode = WAL");
    // NORMAL in WAL mode survives a killed process (only an OS crash can lose the last commits),
    // and keeps one fsync per measurement off the run's path.
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    migrate(db, path);
    return db;
  } catch (e) {
    db?.close();
    if (e instanceof SlicecheckError) throw e;
    // A folder, a path under a file, a read-only or full disk: say which file, not a stack.
    const code = (e as { code?: unknown }).code;
    throw new SlicecheckError(
      "WRITE",
      `cannot open or create the records database ${path}: ${typeof code === "string" ? `${code}: ` : ""}${e instanceof Error ? e.message : String(e)}; give --db (or $SLICECHECK_DB) a file in a writable folder with free space`,
      { path, cause: code },
      { cause: e },
    );
  }
}
