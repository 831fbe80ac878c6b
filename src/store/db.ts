// The records database: one SQLite file (reports/slicecheck.db by default) that keeps every
// run, so that `slicecheck diff` can compare a run before a driver upgrade with one after it.
// WAL mode, and every write in its own small transaction, so a run killed half-way keeps what
// it had measured and a concurrent reader (diff during a run) never blocks the writer.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { SlicecheckError } from "../errors.js";

export type Db = Database;

export const DEFAULT_DB = "reports/slicecheck.db";

/** `--db`, then $SLICECHECK_DB, then the default. */
export function dbPath(flag?: string): string {
  return flag ?? process.env.SLICECHECK_DB ?? DEFAULT_DB;
}

// Each entry moves the schema from version i to i+1. Append only: a file written by an older
// slicecheck is brought forward by running the entries it has not seen, never by rewriting one.
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    label TEXT,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    argv TEXT NOT NULL
  );
  CREATE INDEX runs_label ON runs(label, started);
  CREATE TABLE nodes (
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    driver TEXT,
    cuda TEXT,
    error TEXT,
    PRIMARY KEY (run_id, node)
  );
  CREATE INDEX nodes_driver ON nodes(driver);
  CREATE TABLE gpus (
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    uuid TEXT NOT NULL,
    idx INTEGER,
    product TEXT NOT NULL,
    driver TEXT,
    cuda TEXT,
    vbios TEXT,
    PRIMARY KEY (run_id, uuid)
  );
  CREATE TABLE topology (
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    layout TEXT,
    lgip TEXT,
    lgipp TEXT,
    instances TEXT NOT NULL,
    PRIMARY KEY (run_id, gpu_uuid)
  );
  CREATE TABLE measurements (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    instance_uuid TEXT NOT NULL,
    product TEXT NOT NULL,
    profile TEXT NOT NULL,
    placement TEXT,
    suite TEXT NOT NULL,
    workload TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    repetition INTEGER NOT NULL
  );
  CREATE INDEX measurements_run ON measurements(run_id, node);
  CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    gpu_uuid TEXT,
    instance_uuid TEXT,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    summary TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX verdicts_run ON verdicts(run_id, node);
  CREATE TABLE step_durations (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    gpu INTEGER,
    step TEXT NOT NULL,
    ms REAL NOT NULL
  );
  CREATE INDEX steps_run ON step_durations(run_id, node);
  `,
  // 2: every check of every suite (the one record the reports read), and the Xids a run saw.
  `
  CREATE TABLE checks (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    check_id TEXT NOT NULL,
    suite TEXT NOT NULL,
    node TEXT,
    gpu INTEGER,
    instance TEXT,
    identity TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    code TEXT NOT NULL,
    message TEXT NOT NULL,
    figures TEXT NOT NULL DEFAULT '{}',
    evidence TEXT NOT NULL DEFAULT '[]',
    started TEXT NOT NULL,
    stopped TEXT NOT NULL
  );
  CREATE INDEX checks_run ON checks(run_id, identity);
  CREATE TABLE xids (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    node TEXT NOT NULL,
    pci TEXT,
    xid INTEGER NOT NULL,
    gpu_instance INTEGER,
    compute_instance INTEGER,
    line TEXT NOT NULL
  );
  CREATE INDEX xids_run ON xids(run_id, node);
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

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
      db.exec(MIGRATIONS[v] ?? "");
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return at;
}

export function openDb(path: string, o: { mustExist?: boolean } = {}): Database {
  if (o.mustExist) {
    try {
      const db = new Database(path, { fileMustExist: true, timeout: 10_000 });
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
    db = new Database(path, { timeout: 10_000 });
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
