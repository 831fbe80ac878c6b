// The node side of the lease, run by a real POSIX shell with real flock(1) on a folder of its
// own (SLICECHECK_STATE_DIR), no sshd: a controller that meets a holder in the instant between
// its flock and its info file must still name that holder (two applies at once named "no run"
// under load in a CI run of 4 December 2026).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockScript } from "../../src/harness/lease-script.js";

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
});
