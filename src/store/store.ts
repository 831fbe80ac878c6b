// One records store, two backends: the embedded SQLite file (the default) and a shared
// PostgreSQL database (`--db postgres://…`) that a fleet's runs all write to. The interface is
// asynchronous because a network database is; the SQLite backend answers at once. Every
// caller (recorder, query, regression, diff) speaks this interface and the SQLite dialect with
// `?` placeholders, which the PostgreSQL backend numbers.
import { SlicecheckError } from "../errors.js";
import { type OpenOptions, redactUrl, type Store } from "./backend.js";

export {
  dbTimeoutError,
  isDbTimeout,
  type OpenOptions,
  redactUrl,
  type Sql,
  type Store,
} from "./backend.js";

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** sslmode values node-postgres acts on (libpq's, but `allow`, and its own no-verify). */
const SSLMODES = ["disable", "prefer", "require", "verify-ca", "verify-full", "no-verify"];

/** A `--db` value: a postgres:// URL is checked; any other `scheme://` is refused (it would
 * otherwise be taken for a SQLite file name); a plain path is left to checkDbPath. */
export function checkDbScheme(location: string, option = "--db"): void {
  if (isPostgresUrl(location)) {
    checkPostgresUrl(location, option);
    return;
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(location)?.[1];
  if (scheme)
    throw new SlicecheckError(
      "USAGE",
      `${option} ${redactUrl(location)}: unknown scheme '${scheme}://'; give a file path (SQLite) or a postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE URL`,
      { option },
    );
}

/** A `postgres://` URL that names a host and a database, refused before any work otherwise. */
export function checkPostgresUrl(url: string, option = "--db"): void {
  const bad = (why: string) =>
    new SlicecheckError("USAGE", `${option} ${redactUrl(url)}: ${why}`, { option });
  if (/\s/.test(url))
    throw bad("holds a space; a URL has none (write a space in a password as %20)");
  if (/%(?![0-9A-Fa-f]{2})/.test(url))
    throw bad(
      "bad percent-encoding: '%' must start %XX (two hex digits); write a '%' itself as %25",
    );
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new SlicecheckError(
      "USAGE",
      `${option} ${redactUrl(url)}: not a valid URL; give postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
      { option },
    );
  }
  for (const part of [u.username, u.password, u.pathname]) {
    try {
      decodeURIComponent(part);
    } catch {
      throw bad("bad percent-encoding: its %XX bytes are not UTF-8");
    }
  }
  const sslmode = u.searchParams.get("sslmode");
  if (sslmode !== null && !SSLMODES.includes(sslmode))
    throw bad(`sslmode=${sslmode} is not one of ${SSLMODES.join(", ")}`);
  const host = u.hostname || u.searchParams.get("host");
  if (!host || u.pathname.replace(/^\//, "") === "")
    throw new SlicecheckError(
      "USAGE",
      `${option} ${redactUrl(url)}: names no ${host ? "database" : "host"}; give postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (a unix socket: postgres://USER@/DATABASE?host=/run/postgresql)`,
      { option },
    );
}

/** How long one database call may go unanswered (`--db-timeout`, `db_timeout`) by default. */
export const DEFAULT_DB_TIMEOUT_MS = 30_000;

/** Opens (and brings to the current schema) the store a `--db` value names. */
export async function openStore(location: string, o: OpenOptions = {}): Promise<Store> {
  checkDbScheme(location);
  const opts = { ...o, timeoutMs: o.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS };
  if (isPostgresUrl(location)) {
    return (await import("./postgres.js")).openPostgres(location, opts);
  }
  return (await import("./sqlite.js")).openSqlite(location, opts);
}
