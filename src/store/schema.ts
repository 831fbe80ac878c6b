// The records schema, shared by both backends. Written in SQLite's dialect; the PostgreSQL
// backend translates the few differences (forPostgres) rather than keeping a second copy that
// could drift: one list of migrations, one version number, whichever database holds it.

export type Migration = string | { sqlite: string; postgres: string };

// Each entry moves the schema from version i to i+1. Append only: a file written by an older
// slicecheck is brought forward by running the entries it has not seen, never by rewriting one.
export const MIGRATIONS: readonly Migration[] = [
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
  // 3: the order runs were recorded in. SQLite's rowid gave it; PostgreSQL has none, and two
  // runs can start in the same millisecond (a fleet's jobs), so it is a column of its own.
  {
    sqlite: "ALTER TABLE runs ADD COLUMN seq INTEGER; UPDATE runs SET seq = rowid;",
    postgres: "ALTER TABLE runs ADD COLUMN seq INTEGER;",
  },
  // 4: the controller that wrote a run (host name and process id), so that a later run or diff
  // can tell a run still `running` whose controller is gone (killed with -9) and mark it
  // `abandoned` (abandoned.ts). Older rows have neither and are never marked.
  "ALTER TABLE runs ADD COLUMN host TEXT; ALTER TABLE runs ADD COLUMN pid INTEGER;",
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrationSql(m: Migration, dialect: "sqlite" | "postgres"): string {
  if (typeof m !== "string") return m[dialect];
  return dialect === "sqlite" ? m : forPostgres(m);
}

/** SQLite DDL → PostgreSQL: REAL is float4 there (a TFLOP/s figure would lose digits), and an
 * INTEGER PRIMARY KEY only auto-numbers in SQLite. */
export function forPostgres(ddl: string): string {
  return ddl
    .replace(/\bINTEGER PRIMARY KEY\b/g, "BIGSERIAL PRIMARY KEY")
    .replace(/\bREAL\b/g, "DOUBLE PRECISION");
}

/** `?` placeholders → `$1, $2, …` (no statement of the store has a literal `?`). */
export function numberedParams(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
