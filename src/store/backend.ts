// What the store's two backends (sqlite.ts, postgres.ts) share with every caller: the
// interface, and the errors and redaction they report with. Apart from store.ts because
// store.ts opens the backends: a backend importing it back would be an import cycle.
import { SlicecheckError } from "../errors.js";

export interface Sql {
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sql: string, params?: readonly unknown[]): Promise<void>;
}

/** How far a write's commit must outlast a crash. */
export interface WriteOptions {
  /**
   * true: the commit outlasts the controller's death, but the database host's crash or power
   * loss may take the last moments of such commits (SQLite: synchronous=NORMAL; PostgreSQL:
   * synchronous_commit=off, at most about 3 × wal_writer_delay). The database stays consistent,
   * and the next durable commit makes every earlier one durable too (both logs are written in
   * order). false (the default): durable once the call returns (fsync, or the server's own
   * synchronous_commit).
   */
  relaxed?: boolean;
}

export interface Store extends Sql {
  readonly kind: "sqlite" | "postgres";
  /** For messages: the file, or the URL without its password. */
  readonly location: string;
  /** One statement, its own commit. */
  run(sql: string, params?: readonly unknown[], o?: WriteOptions): Promise<void>;
  /** Everything `fn` does commits together or not at all. */
  transaction<T>(fn: (tx: Sql) => Promise<T>, o?: WriteOptions): Promise<T>;
  close(): Promise<void>;
}

/** The URL as it may be printed: a password never reaches a terminal, a log or a report. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}

export interface OpenOptions {
  mustExist?: boolean;
  /** The bound on every wait for the database (connect, statement, commit, lock). */
  timeoutMs?: number;
}

/** A database call that got no answer within the timeout: the records are lost, not late. */
export function dbTimeoutError(
  location: string,
  doing: string,
  timeoutMs: number,
  cause: unknown,
  code: "DB" | "WRITE",
  why: string,
): SlicecheckError {
  return new SlicecheckError(
    code,
    `records database ${location}: ${doing} got no answer within ${timeoutMs / 1000} s (--db-timeout); ${why}`,
    { location, timeoutMs, timedOut: true },
    { cause },
  );
}

/** Whether an error is a database call that ran out of its --db-timeout. */
export function isDbTimeout(e: unknown): boolean {
  return e instanceof SlicecheckError && e.context.timedOut === true;
}
