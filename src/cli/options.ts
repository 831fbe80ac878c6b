// Numeric and path options, checked where they are parsed, so that a bad value is refused
// (exit 3) before any node is touched. The bounds are what makes sense and what Node can do:
// a timer longer than 2^31-1 ms (24.8 days) fires after 1 ms, so a "long" timeout would kill
// a command at once.
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SlicecheckError } from "../errors.js";
import { checkDbScheme, isPostgresUrl } from "../store/store.js";
import { durationSeconds } from "../util/duration.js";
import { settingLabel } from "./config/resolve.js";

export { durationSeconds };
export const DAY_S = 86_400;
export const MAX_SECONDS = 7 * DAY_S;
export const MAX_CONCURRENCY = 1024;

const INTEGER = /^\d+$/;

function usage(message: string, option: string): SlicecheckError {
  return new SlicecheckError("USAGE", message, { option });
}

function describeSeconds(s: number): string {
  return s % DAY_S === 0 ? `${s / DAY_S} days` : s % 3600 === 0 ? `${s / 3600} h` : `${s} s`;
}

/** A duration from `min` to `max` seconds (7 days by default): `30`, `30s`, `5m`, `1h`. */
export function parseSeconds(option: string, min = 0, max = MAX_SECONDS) {
  const range =
    min > 0
      ? `from ${min} s to ${describeSeconds(max)}`
      : `above 0 and at most ${describeSeconds(max)}`;
  return (v: string): number => {
    const n = durationSeconds(v);
    if (!Number.isFinite(n) || n < min || n <= 0 || n > max)
      throw usage(
        `${option} expects a duration ${range} (${max} s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '${v}'`,
        option,
      );
    return n;
  };
}

/** A whole number from `min` to `max`. */
export function parseIntIn(option: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
  return (v: string): number => {
    const n = INTEGER.test(v.trim()) ? Number(v) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw usage(`${option} expects a whole number ${range}, got '${v}'`, option);
    return n;
  };
}

const PERCENT = /^(\d+(?:\.\d+)?)\s*(%?)$/;

/**
 * A tolerance in percent, the one unit of every `--tolerance` (run and diff): `5` and `5%` are
 * five percent, returned as the fraction 0.05 (what the verdicts compare with). Allowed: above
 * 0 and at most 100 %. A bare number below 1 (`0.05`) is refused rather than guessed: it is
 * either a fraction written in the old unit (meaning 5 %) or a tiny percentage, and a wrong
 * guess either hides a regression (500 %) or fails on noise (0.05 %). `0.5%` with the sign is
 * unambiguous and accepted.
 */
export function parsePercent(option: string) {
  return (v: string): number => {
    const m = PERCENT.exec(v.trim());
    const n = m ? Number(m[1]) : Number.NaN;
    if (!m || !Number.isFinite(n) || n <= 0 || n > 100)
      throw usage(
        `${option} expects a percentage above 0 and at most 100 (5 or 5% is five percent), got '${v}'`,
        option,
      );
    if (m[2] === "" && n < 1)
      throw usage(
        `${option} is in percent: '${v}' would be ${v} %; for ${Number((n * 100).toFixed(4))} percent write ${Number((n * 100).toFixed(4))}, for ${v} percent write ${v}%`,
        option,
      );
    return n / 100;
  };
}

export const parseDuration = parseSeconds("--duration", 1);

/** --db-timeout: how long one records-database call may go unanswered (1 s to 1 h). */
export const parseDbTimeout = parseSeconds("--db-timeout", 1, 3600);
export const parseConcurrency = parseIntIn("--concurrency", 1, MAX_CONCURRENCY);
export const parseFanout = parseIntIn("--fanout", 1, MAX_CONCURRENCY);

function pathError(option: string, path: string, why: string, what: string): SlicecheckError {
  return new SlicecheckError("OUTPUT_PATH", `${option} ${path}: ${why}; ${what}`, {
    option,
    path,
  });
}

/** The nearest existing ancestor must be a writable folder, or the path can never be made. */
function checkCreatable(option: string, path: string, what: string): void {
  let dir = dirname(resolve(path));
  for (;;) {
    if (existsSync(dir)) break;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(dir);
  } catch (e) {
    throw pathError(
      option,
      path,
      `${dir} cannot be read (${(e as NodeJS.ErrnoException).code})`,
      what,
    );
  }
  if (!st.isDirectory())
    throw pathError(option, path, `${dir} is a file, so nothing can be created under it`, what);
  try {
    accessSync(dir, constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "EROFS" ? "is on a read-only file system" : `is not writable (${code})`;
    throw pathError(option, path, `${dir} ${why}`, what);
  }
}

function checkWritable(option: string, path: string, what: string): void {
  try {
    accessSync(path, constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "EROFS" ? "is on a read-only file system" : `is not writable (${code})`;
    throw pathError(option, path, why, what);
  }
}

/** A records database file: not a folder, and creatable or writable. */
export function checkDbPath(path: string, option = "--db"): void {
  const what =
    "give the path of a database file (e.g. reports/slicecheck.db) with --db or $SLICECHECK_DB";
  if (path.trim() === "") throw pathError(option, "''", "is empty", what);
  if (existsSync(path)) {
    if (statSync(path).isDirectory())
      throw pathError(option, path, "is a folder, not a database file", what);
    checkWritable(option, path, what);
    return;
  }
  checkCreatable(option, path, what);
}

/** An output folder (--out, --journal-dir): not a file, and creatable or writable. */
export function checkOutDir(path: string, option: string): void {
  const what = `give ${option} a folder slicecheck can write to`;
  if (path.trim() === "") throw pathError(option, "''", "is empty", what);
  if (existsSync(path)) {
    if (!statSync(path).isDirectory())
      throw pathError(option, path, "is a file, not a folder", what);
    checkWritable(option, path, what);
    return;
  }
  checkCreatable(option, path, what);
}

/** run's output paths: the records database (`db`, as dbPath() resolved it) and the run's
 * folder, refused before any work. */
export function checkRunPaths(o: { db?: string; out?: string }, db: string): void {
  const from =
    o.db === undefined && process.env.SLICECHECK_DB !== undefined
      ? "$SLICECHECK_DB"
      : settingLabel("db", "--db");
  checkDbScheme(db, from);
  if (!isPostgresUrl(db)) checkDbPath(db, from);
  checkOutDir(o.out ?? join("reports", "runs"), o.out ? settingLabel("out", "--out") : "--out");
}
