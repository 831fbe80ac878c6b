// A command's process group killed by the node's shells, on real processes, no sshd: the group
// kill of a command that stays in its group (group-kill.ts), and the group half of a kill by tag
// (a process of the command that lost its tags, `env -i`, is found by its group alone). Each
// under dash, the `sh` of Debian and Ubuntu, which is what the node supervisor's kill requests
// and watchdogs run under, and under bash. dash's kill takes no `--`: `kill -TERM -- -PGID`
// there is "Illegal number: -", and the group was never signalled.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { killGroupScript } from "../../src/transport/group-kill.js";
import { killCommandScript, SUPERVISED_WATCHDOG } from "../../src/transport/remote-scripts.js";
import { statFields } from "../helpers/procs.js";

/** Live (not zombie) members of process group `pgid` (/proc/PID/stat's pgrp). */
function members(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      const f = statFields(d);
      return f !== null && Number(f[2]) === pgid && f[0] !== "Z";
    })
    .map(Number);
}

/** A group of its own holding `sh` (its leader: pid = pgid) and two sleeps, one of them with an
 * empty environment; resolves once all three are up. The leader's parent waits for it, as the
 * supervisor's runner does, so its end is reaped at once. */
async function group(tag: string): Promise<{ p: ChildProcess; pgid: number }> {
  const p = spawn(
    "sh",
    ["-c", `setsid sh -c 'env -i sleep 60 & sleep 60 & wait' & echo $!; wait`],
    {
      stdio: ["ignore", "pipe", "ignore"],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SLICECHECK_CMD: tag },
    },
  );
  const first = await new Promise<string>((r) => p.stdout?.once("data", (b) => r(String(b))));
  const pgid = Number(first.trim());
  for (let i = 0; i < 100 && members(pgid).length < 3; i++)
    await new Promise((r) => setTimeout(r, 20));
  assert.equal(members(pgid).length, 3, "the group did not come up");
  return { p, pgid };
}

/** The group's live members once the kill's signals have had time to land: a KILLed process
 * dies when the kernel next schedules it, which on a loaded machine (load average above 100
 * once here) comes after the killer has returned. Up to 2 s; a member that got no signal lives
 * on past it. */
async function survivors(pgid: number): Promise<number[]> {
  for (let i = 0; i < 100 && members(pgid).length > 0; i++)
    await new Promise((r) => setTimeout(r, 20));
  return members(pgid);
}

const shells = ["sh", "bash"] as const;

/** Runs `script` under `shell`; its stdout. */
function run(shell: string, script: string, args: string[] = []): string {
  const r = spawnSync(shell, ["-c", script, "x", ...args], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, "", `${shell} complained: ${r.stderr}`);
  return r.stdout;
}

describe("kill by group (dash and bash on real processes, no sshd)", function () {
  this.timeout(20_000);
  const groups: number[] = [];
  afterEach(() => {
    for (const g of groups.splice(0))
      try {
        process.kill(-g, "SIGKILL");
      } catch {
        /* already gone */
      }
  });

  for (const shell of shells) {
    it(`stops the whole group of a command that stays in it, under ${shell}`, async () => {
      const { pgid } = await group("g1");
      groups.push(pgid);
      const out = run(shell, killGroupScript(pgid));
      assert.match(out, /alive=1\b/, out);
      assert.match(out, /killed=1\b/, out);
      assert.deepEqual(await survivors(pgid), [], "a member of the group outlived its kill");
    });

    it(`says the group was gone, and signals nothing, under ${shell}`, async () => {
      const { p, pgid } = await group("g2");
      const parentEnded = new Promise((r) => p.once("exit", r));
      process.kill(-pgid, "SIGKILL");
      await parentEnded;
      const out = run(shell, killGroupScript(pgid));
      assert.match(out, /alive=0\b/, out);
      assert.match(out, /killed=0\b/, out);
    });

    it(`a kill by tag stops the member that lost its tags, by its group, under ${shell}`, async () => {
      const { pgid } = await group("g3");
      groups.push(pgid);
      const out = run(shell, killCommandScript("g3", pgid));
      assert.match(out, /alive=[1-9]\b/, out);
      assert.deepEqual(await survivors(pgid), [], "the untagged member outlived the kill");
    });

    it(`the supervisor's watchdog stops the member that lost its tags, under ${shell}`, async () => {
      const { pgid } = await group("g4");
      groups.push(pgid);
      run(shell, SUPERVISED_WATCHDOG, ["g4", String(pgid)]);
      assert.deepEqual(await survivors(pgid), [], "the untagged member outlived the watchdog");
    });
  }

  it("never takes 1 (every process) or 0 (its own group) for a group", () => {
    for (const bad of [0, 1, -5, 2.5])
      assert.throws(() => killGroupScript(bad), /not a process group/);
    assert.match(killGroupScript(4242), /kill -TERM -4242 /);
    // A kill by tag signals its group too, never group 1 nor with `--`.
    assert.match(killCommandScript("t", 4242), /kill -TERM -4242 /);
    assert.doesNotMatch(killCommandScript("t", 1), /kill -[A-Z]+ -1\b/);
    assert.doesNotMatch(killCommandScript("t", 4242), / -- -/);
  });
});
