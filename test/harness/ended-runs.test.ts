// How a run that did not finish ends (real sshd, the CLI as a child process): SIGTERM exits 143,
// as the README says (128 + SIGTERM, what a scheduler that sent it expects), after the same
// orderly stop as Ctrl-C; a run killed with -9 keeps `running` in the records only until a later
// diff (or run) on this machine sees that its controller is gone and marks it `abandoned`, and
// diff warns about it and exits 2.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { cli, runArgs } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";

describe("runs that did not finish: SIGTERM, kill -9 (real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster(1);

  /** Starts `run` as a child process; resolves its exit once the stress prints a line. */
  async function startRun(name: string) {
    const child = spawn(
      process.execPath,
      ["bin/slicecheck.js", ...runArgs(c, name, { duration: 30 })],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) =>
      child.on("exit", (code, signal) => r({ code, signal })),
    );
    const dir = join(c.dir, name, "sim01");
    const printed = () =>
      existsSync(dir) &&
      readdirSync(dir).some(
        (f) => f.endsWith(".stress.1.log") && /stress t=/.test(readFileSync(join(dir, f), "utf8")),
      );
    assert.ok(await waitFor(printed, 90_000, 100), out);
    return { child, exited, out: () => out };
  }

  const runRow = (db: string) => {
    const d = new Database(db, { readonly: true });
    try {
      return d.prepare("SELECT id, status, host, pid FROM runs").get() as {
        id: string;
        status: string;
        host: string;
        pid: number;
      };
    } finally {
      d.close();
    }
  };

  it("SIGTERM mid-run: the workloads stop, the reports are written, exit 143", async () => {
    const r = await startRun("term");
    r.child.kill("SIGTERM");
    const { code } = await r.exited;
    assert.equal(code, 143, r.out());
    assert.match(r.out(), /SIGTERM: stopping the workloads/);
    assert.equal(runRow(join(c.dir, "term.db")).status, "interrupted");
    assert.ok(existsSync(join(c.dir, "term", "junit.xml")), "the reports are written");
  });

  it("kill -9 mid-run: `running` until a diff sees the dead controller, then `abandoned`; diff warns and exits 2", async () => {
    const r = await startRun("killed");
    const pid = r.child.pid!;
    r.child.kill("SIGKILL");
    assert.equal((await r.exited).signal, "SIGKILL");
    const db = join(c.dir, "killed.db");
    const before = runRow(db);
    // What the records said before this change, forever: the run is still `running`.
    assert.equal(before.status, "running");
    assert.equal(before.pid, pid, "the row names its controller");
    const d = await cli("diff", "--db", db, "--before", before.id, "--after", before.id);
    assert.equal(d.code, 2, d.stdout + d.stderr);
    assert.match(
      d.stderr,
      new RegExp(`warning: run ${before.id} is abandoned: its controller died`),
    );
    assert.equal(runRow(db).status, "abandoned");
  });
});
