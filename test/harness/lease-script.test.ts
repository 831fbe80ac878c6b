// The node side of the lease, run by a real POSIX shell with real flock(1) on a folder of its
// own (SLICECHECK_STATE_DIR), no sshd: a controller that meets a holder in the instant between
// its flock and its info file must still name that holder (two applies at once named "no run"
// under load in a CI run of 4 December 2026).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockScript, RELEASE_BYTE } from "../../src/harness/lease-script.js";
import { type NotingTools, notingTools } from "../helpers/noting-tools.js";

/** A holder that takes flock at once and writes its info and lease `afterS` later (never when
 * null), then keeps the lock for 6 s. */
function holder(dir: string, afterS: number | null): ChildProcess {
  const write =
    afterS === null
      ? ""
      : `sleep ${afterS}; printf '%s\\n' '{"runId":"sc-holder","command":"apply","controller":"c","pid":1,"started":"s"}' > "$D/node.lock.json"; echo "1 $(($(date +%s) + 30)) held tag" > "$D/node.lease";`;
  return spawn("flock", ["-x", join(dir, "node.lock"), "sh", "-c", `${write} sleep 6`], {
    env: { ...process.env, D: dir },
    stdio: "ignore",
  });
}

/** The second controller's lock script, run to its refusal; its output. */
function contender(dir: string): Promise<{ out: string }> {
  const script = lockScript({ info: '{"runId":"sc-second"}', leaseS: 30, runTag: "t2" });
  const p = spawn("sh", ["-c", script], { env: { ...process.env, SLICECHECK_STATE_DIR: dir } });
  let out = "";
  p.stdout.on("data", (b) => (out += b));
  return new Promise((resolve) => p.on("close", () => resolve({ out })));
}

/** Waits until the holder has the lock (a flock -n of our own fails). */
async function held(dir: string): Promise<void> {
  for (;;) {
    const free = await new Promise<boolean>((r) =>
      spawn("flock", ["-n", join(dir, "node.lock"), "true"]).on("close", (c) => r(c === 0)),
    );
    if (!free) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("node lease script (sh and flock, no sshd)", function () {
  this.timeout(20_000);
  let dir = "";
  let h: ChildProcess | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "slicecheck-lease-script-"));
  });
  afterEach(() => {
    h?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("a holder caught between its flock and its info file is still named in the refusal", async () => {
    h = holder(dir, 0.7);
    await held(dir);
    const r = await contender(dir);
    assert.match(r.out, /^LOCK_HELD \d+\n1 \d+ held tag\n/, r.out);
    assert.match(r.out, /"runId":"sc-holder"/, r.out);
  });

  it("a holder that never writes its lease is described as found after a bounded wait", async () => {
    h = holder(dir, null);
    await held(dir);
    const r = await contender(dir);
    assert.match(r.out, /^LOCK_HELD \d+\n\n/, r.out);
    assert.doesNotMatch(r.out, /runId/);
    // Bounded: it answered while the holder (6 s) still held the lock.
    assert.equal(h.exitCode, null);
  });

  /** A holder of `tag`'s lease, ended by `end` once it holds; its output and whether each of
   * two processes survived: one of the run's and one of another run's. */
  async function release(end: (stdin: NodeJS.WritableStream) => void) {
    const tag = "sc-20261205T000000Z-abcdef@n1";
    const mine = spawn("sleep", ["60"], { env: { ...process.env, SLICECHECK_RUN: tag } });
    const other = spawn("sleep", ["60"], { env: { ...process.env, SLICECHECK_RUN: "other@n1" } });
    try {
      const script = lockScript({ info: '{"runId":"sc-x"}', leaseS: 30, runTag: tag });
      const p = spawn("sh", ["-c", script], { env: { ...process.env, SLICECHECK_STATE_DIR: dir } });
      let out = "";
      p.stdout.on("data", (b) => {
        out += b;
        if (/^LOCK_OK /m.test(out) && p.stdin.writable) end(p.stdin);
      });
      await new Promise((r) => p.on("close", r));
      // The holder waited for what it stopped to be gone from /proc: its exit is on its way.
      await Promise.race([
        new Promise((r) => mine.once("exit", r)),
        new Promise((r) => setTimeout(r, 2000)),
      ]);
      return { out, mine: mine.signalCode, other: other.signalCode };
    } finally {
      mine.kill("SIGKILL");
      other.kill("SIGKILL");
    }
  }

  it("a release stops the run's processes left on the node before it says RELEASED", async () => {
    const r = await release((stdin) => {
      stdin.write(RELEASE_BYTE);
      stdin.end();
    });
    assert.match(r.out, /^LOCK_OK [\s\S]*\nRELEASED\n$/, r.out);
    assert.equal(r.mine, "SIGTERM");
    assert.equal(r.other, null, "another run's process is left alone");
  });

  it("a bare end of input (a controller killed) releases at once and stops nothing itself", async () => {
    const r = await release((stdin) => stdin.end());
    assert.match(r.out, /^LOCK_OK [\s\S]*\nRELEASED\n$/, r.out);
    assert.deepEqual([r.mine, r.other], [null, null]);
  });
});

describe("node lease script under bash and under sh: renewals and expiry", function () {
  this.timeout(20_000);
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "slicecheck-lease-shells-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Tools that must not run under bash (its builtins stand for them): each says so, loudly. */
  function tripwires(): string {
    const bin = join(dir, "tripwires");
    mkdirSync(bin);
    for (const tool of ["date", "timeout", "dd"]) {
      writeFileSync(join(bin, tool), `#!/bin/sh\necho "${tool.toUpperCase()}-RAN" >&2\nexit 1\n`);
      chmodSync(join(bin, tool), 0o755);
    }
    return bin;
  }

  for (const shell of ["/bin/bash", "/bin/sh"]) {
    it(`${shell}: answers each heartbeat byte with a renewal, and expires a lease left silent`, async () => {
      const bash = shell === "/bin/bash";
      const path = bash ? `${tripwires()}:${process.env.PATH}` : process.env.PATH;
      const script = lockScript({ info: '{"runId":"sc-x"}', leaseS: 1, runTag: "t@n1" });
      const p = spawn(shell, ["-c", script], {
        env: { ...process.env, PATH: path, SLICECHECK_STATE_DIR: join(dir, "state") },
      });
      let out = "";
      let err = "";
      let beats = 0;
      p.stderr.on("data", (b) => (err += b));
      p.stdout.on("data", (b) => {
        out += b;
        // Two heartbeats, one after each answer; then silence.
        if (beats < 2 && (out.match(/^(LOCK_OK|RENEWED) /gm) ?? []).length > beats) {
          beats++;
          p.stdin.write("h");
        }
      });
      await new Promise((r) => p.on("close", r));
      assert.match(
        out,
        /^LOCK_OK 1 \d+ none \nRENEWED 1 \d+\nRENEWED 1 \d+\nLEASE_EXPIRED\n$/,
        out,
      );
      if (bash) assert.doesNotMatch(err, /-RAN/, "bash used its builtins");
    });
  }
});

describe("the lease's release under bash, from an sshd's connection (a bash named sshd, no sshd)", function () {
  this.timeout(20_000);
  const tag = "sc-20261206T000000Z-abcdef@n1";
  let dir = "";
  let tools: NotingTools;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "slicecheck-lease-conn-"));
    // comm is the executable's own name: a link named sshd makes bash look like the process
    // that serves the connection, whose children the holder and the reads beside it are.
    symlinkSync("/bin/bash", join(dir, "sshd"));
    // Every grep the holder runs is noted: the scan of everything greps every process's
    // environ, bash's scan of what came after reads them itself.
    tools = notingTools(["grep"]);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The connection (the fake sshd) starts a read beside the lock (a tagged `sleep 60` when
   * `beside`), then the holder as its child; once it holds, the release. The holder's output,
   * the read's pid, how it ended, and whether any grep ran. */
  async function releaseOverConnection(beside: boolean) {
    const script = lockScript({ info: '{"runId":"sc-x"}', leaseS: 30, runTag: tag });
    const read = beside
      ? `SLICECHECK_RUN='${tag}' /bin/sleep 60 >/dev/null 2>&1 & echo "beside $!";`
      : "";
    // `; :` keeps bash from exec-ing the holder in its own place: the holder is its child.
    const conn = spawn(join(dir, "sshd"), ["-c", `${read} /bin/bash -c "$1"; :`, "sshd", script], {
      env: { ...process.env, PATH: tools.path, SLICECHECK_STATE_DIR: dir },
    });
    let out = "";
    conn.stdout.on("data", (b) => {
      out += b;
      if (/^LOCK_OK /m.test(out) && conn.stdin.writable) {
        conn.stdin.write(RELEASE_BYTE);
        conn.stdin.end();
      }
    });
    await new Promise((r) => conn.on("close", r));
    const pid = Number(/^beside (\d+)$/m.exec(out)?.[1] ?? 0);
    let gone = false;
    for (let i = 0; pid && i < 40 && !gone; i++) {
      gone = !existsSync(`/proc/${pid}`) || /\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
      if (!gone) await new Promise((r) => setTimeout(r, 50));
    }
    if (pid && !gone) process.kill(pid, "SIGKILL");
    return { out, pid, gone, grepRan: tools.calls().includes("grep") };
  }

  it("a read the connection started before the holder is still stopped by the release", async () => {
    const r = await releaseOverConnection(true);
    assert.match(r.out, /\nLOCK_OK [\s\S]*\nRELEASED\n$/, r.out);
    assert.ok(r.pid > 0, r.out);
    assert.ok(r.gone, "the read started beside the lock was stopped");
  });

  it("nothing left: one scan by bash of what the connection started, no grep of every process", async () => {
    const r = await releaseOverConnection(false);
    assert.match(r.out, /^LOCK_OK [\s\S]*\nRELEASED\n$/, r.out);
    assert.equal(r.grepRan, false, "no scan of everything (and so no second look 0.1 s later)");
  });
});
