// A throwaway PostgreSQL for the tests, the bench and the demo: Debian's own server binaries,
// a data folder of its own, listening on 127.0.0.1 and a unix socket in that folder, run as an
// unprivileged user (postgres refuses to run as root), stopped by its pid. Nothing of the
// machine's own PostgreSQL (a packaged cluster on 5432) is touched.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { SlicecheckError } from "../../src/errors.js";
import { freeServicePort } from "./sshd.js";

export interface LocalPostgres {
  url: string;
  dir: string;
  pid: number;
  stop(): Promise<void>;
  /** Stops the server and starts it again on the same data and port. */
  restart(): Promise<void>;
}

/** The newest /usr/lib/postgresql/<major>/bin that has initdb (Debian 12: 15). */
export function findPostgresBin(): string {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const major = majors[0];
  if (!major)
    throw new SlicecheckError(
      "TOOL_MISSING",
      "PostgreSQL's server is not installed (no /usr/lib/postgresql/*/bin/initdb); install it with `apt-get install -y postgresql` (npm test does this itself)",
    );
  return join(root, major, "bin");
}

/** The account the server runs as: `nobody` unless told otherwise. */
function account(name: string): { uid: number; gid: number } {
  const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim());
  return { uid, gid };
}

async function ready(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new SlicecheckError("DB", `postgres exited with ${child.exitCode}: ${log()}`);
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await c.connect();
      await c.end();
      return;
    } catch (e) {
      await c.end().catch(() => {});
      if (Date.now() > end)
        throw new SlicecheckError(
          "DB",
          `postgres did not accept connections within 30 s: ${(e as Error).message}: ${log()}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * initdb + postgres in `dir` (created; must be a folder the account can reach). `durable`
 * false turns fsync off, for tests that only need the semantics; the bench keeps it on to
 * compare like with like (SQLite in WAL mode does fsync its checkpoints).
 */
export async function startPostgres(
  dir: string,
  o: { user?: string; durable?: boolean } = {},
): Promise<LocalPostgres> {
  const bin = findPostgresBin();
  const who = account(o.user ?? "nobody");
  const data = join(dir, "data");
  const sock = join(dir, "sock");
  for (const d of [dir, sock]) {
    mkdirSync(d, { recursive: true });
    chownSync(d, who.uid, who.gid);
  }
  const as = { uid: who.uid, gid: who.gid, env: { ...process.env, HOME: dir, LC_ALL: "C" } };
  try {
    execFileSync(
      join(bin, "initdb"),
      ["-D", data, "-U", "slicecheck", "--auth=trust", "-E", "UTF8", "--no-instructions"],
      { ...as, cwd: dir, stdio: "pipe" },
    );
  } catch (e) {
    const err = e as { stderr?: Buffer };
    throw new SlicecheckError(
      "DB",
      `initdb in ${data} failed: ${err.stderr?.toString().trim() ?? String(e)}`,
    );
  }
  const port = await freeServicePort();
  const logFile = join(dir, "postgres.log");
  writeFileSync(logFile, "");
  chownSync(logFile, who.uid, who.gid);
  const args = ["-D", data, "-h", "127.0.0.1", "-p", String(port), "-k", sock];
  if (o.durable === false) args.push("-c", "fsync=off", "-c", "synchronous_commit=off");
  let out = "";
  const launch = (): ChildProcess => {
    const c = spawn(join(bin, "postgres"), args, {
      ...as,
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    c.stdout?.on("data", (b: Buffer) => {
      out = (out + b.toString()).slice(-4000);
    });
    c.stderr?.on("data", (b: Buffer) => {
      out = (out + b.toString()).slice(-4000);
    });
    return c;
  };
  let child = launch();
  const url = `postgres://slicecheck@127.0.0.1:${port}/postgres`;
  const stop = async () => {
    const c = child;
    if (c.exitCode !== null || c.pid === undefined) return;
    const gone = new Promise<void>((r) => c.once("exit", () => r()));
    // SIGINT: "fast shutdown", rolls back open transactions and exits cleanly.
    process.kill(c.pid, "SIGINT");
    await Promise.race([gone, new Promise((r) => setTimeout(r, 15_000))]);
    if (c.exitCode === null) process.kill(c.pid, "SIGKILL");
  };
  const handle: LocalPostgres = { url, dir, pid: child.pid ?? 0, stop, restart: async () => {} };
  const up = async () => {
    try {
      await ready(url, child, () => out.trim());
    } catch (e) {
      await stop();
      throw e;
    }
    child.unref();
    handle.pid = child.pid ?? 0;
  };
  // The same data folder and port, a new postmaster: what a server's crash and restart (or a
  // failover) looks like to a client, whose connections all drop.
  handle.restart = async () => {
    await stop();
    child = launch();
    await up();
  };
  await up();
  return handle;
}
