// How the PostgreSQL backend commits (postgres.ts): relaxed writes with synchronous_commit=off,
// durable ones with the server's own setting, and writes as prepared statements.
//
// Why relaxed commits are the SQLite backend's promise, not a weaker one: the SQLite file runs
// WAL with synchronous=NORMAL (db.ts), so a commit outlasts the controller's death and only the
// machine's crash or power loss may take its last commits. synchronous_commit=off is the same
// promise for a server: COMMIT returns once the commit is in the server's WAL buffers (it
// outlasts the controller at once), the WAL writer flushes it within about 3 × wal_writer_delay,
// a server crash may lose those last commits and never leaves the database inconsistent.
// Durable commits (a run's start and end, and the check that its records are written) use the
// server's own synchronous_commit, and because WAL is flushed in order, each one makes every
// relaxed commit before it durable too: a run that reads finished has all its rows on disk.
//
// The setting is the transaction's own (set_config(…, true), SET LOCAL's function form), never
// the session's: it ends with the commit, leaks to nothing else on the connection (a pooler in
// transaction mode hands server connections from client to client), and a durable commit needs
// nothing put back. A single INSERT sets it in the same statement (relaxedStatement), so a
// batch stays one round trip; SET LOCAL would need BEGIN and COMMIT around it, three more.
//
// One difference needs a guard: SQLite's crash takes the controller with it, but a server can
// crash and restart while the controller runs on, and pg's pool would reconnect and carry on
// as if nothing had been lost. So every relaxed commit notes which start of the server took it
// (pg_postmaster_start_time()), and the next durable commit first checks that the server is
// still that one; if it restarted (or failed over), the durable commit fails, so the run's
// records read as incomplete instead of complete with a hole.
import { createHash } from "node:crypto";
import type pg from "pg";
import { SlicecheckError } from "../errors.js";
import { numberedParams } from "./schema.js";

/** Turns the transaction's commit relaxed, and answers the server's start (`up`). */
const RELAX =
  "set_config('synchronous_commit', 'off', true) AS relaxed, pg_postmaster_start_time()::text AS up";

/** The first statement of a relaxed transaction. */
export const RELAX_TRANSACTION = `SELECT ${RELAX}`;

/**
 * `sql` (a `?` statement) as one statement that also relaxes its own commit, or null where it
 * cannot (not an INSERT, UPDATE or DELETE). The write becomes a data-modifying WITH, which runs
 * whole even unreferenced; the SELECT answers one row whatever the write's size.
 */
export function relaxedStatement(sql: string): string | null {
  if (!/^\s*(INSERT|UPDATE|DELETE)\b/i.test(sql)) return null;
  return `WITH w AS (${sql}) SELECT ${RELAX}`;
}

/**
 * The server starts that took relaxed commits since the last durable one. A durable commit
 * calls check() inside its transaction (before COMMIT) and settled() after it.
 */
export class RelaxedCommits {
  private readonly starts = new Set<string>();

  /** Whether a durable commit must check the server (any relaxed commit since the last). */
  get pending(): boolean {
    return this.starts.size > 0;
  }

  /** A relaxed commit done, with the `up` its relaxing statement answered. */
  committed(up: unknown): void {
    this.starts.add(String(up));
  }

  async check(c: pg.ClientBase, location: string): Promise<void> {
    const up = String((await c.query("SELECT pg_postmaster_start_time()::text AS up")).rows[0]?.up);
    const lost = [...this.starts].filter((s) => s !== up);
    if (lost.length === 0) return;
    throw new SlicecheckError(
      "DB",
      `records database ${location}: the server restarted during the run (started ${lost.join(", ")}, now ${up}): the last writes before its restart were committed with synchronous_commit=off and may be lost; this run's records there are incomplete`,
      { location, restarted: true, before: lost, now: up },
    );
  }

  settled(): void {
    this.starts.clear();
  }
}

/** Statements with more bound parameters than this run unnamed: every named one stays prepared
 * on its connection. Rows go as one parameter (batch.ts jsonRowsStatement); this bounds the
 * rest, which the recorder never grows with a batch's size. */
const PREPARE_MAX_PARAMS = 2_000;

/** SQLSTATEs of a named statement that a pooler in transaction mode (PgBouncer before 1.21, or
 * without max_prepared_statements) lost or shares: the server connection is another one. */
const PREPARED_LOST = new Set(["26000", "42P05"]);

/** Whether `e` says that named statements do not work over this connection (a pooler). */
export function preparedLost(e: unknown): boolean {
  return PREPARED_LOST.has(String((e as { code?: unknown }).code));
}

/** A write as a named (prepared) statement when `named`: the server parses and plans its text
 * once per connection, and a batch of a node's instances is the same text every time. */
export function writeStatement(
  sql: string,
  params: readonly unknown[],
  named: boolean,
): pg.QueryConfig {
  const text = numberedParams(sql);
  const values = [...params];
  if (!named || values.length > PREPARE_MAX_PARAMS) return { text, values };
  const name = `slicecheck_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
  return { name, text, values };
}
