// No stall reads as a pass, and no slow login reads as a failure (real sshd, simulated H100):
// a node whose sshd is stopped for 20 s mid-run does not pass its stress; a node whose login
// shell takes 3 s still passes a 5 s workload, because deadlines count from the command's
// start on the node; the node lock a killed holder left behind is taken over, and said so.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readPid } from "../../sim/src/sshd.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";
import { childrenOf } from "../helpers/procs.js";

describe("stalls and slow logins (real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }, {}]);
  const json = (stdout: string) =>
    JSON.parse(stdout) as { checks: CheckRecord[]; exitCode: number };
  const stress = (s: { checks: CheckRecord[] }, node: string) =>
    s.checks.filter((x) => x.suite === "stress" && x.node === node);

  it("a node's sshd stopped for 20 s mid-run: its stress is broken (disturbed), never passed or failed, and the run exits 2", async () => {
    const rec = simNodeRecord(c.inventoryPath, "sim01");
    const listener = readPid(join(rec.dir, "sshd.pid"))!;
    const running = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--duration",
      "30",
      "--out",
      join(c.dir, "stalled"),
      "--db",
      join(c.dir, "s.db"),
      "--json",
    );
    // Once the stress runs on sim01, freeze its sshd sessions (the connection stays open).
    assert.ok(
      await waitFor(() => {
        try {
          return readdirSync(join(c.dir, "stalled", "sim01")).length > 0;
        } catch {
          return false;
        }
      }, 30_000),
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const frozen = childrenOf(listener);
    assert.ok(frozen.length > 0, "sim01 has a session to stop");
    const stoppedAt = Date.now();
    for (const p of frozen) process.kill(p, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 20_000));
    for (const p of frozen) process.kill(p, "SIGCONT");
    const r = await running;
    const s = json(r.stdout);
    assert.equal(r.code, 2, r.stderr);
    const mine = stress(s, "sim01");
    assert.equal(mine.length, 1);
    // Disturbed, so undecided: neither passed nor a failure of the node. The node's watchdog
    // stopped the workload 15 s into the stall (its heartbeats stopped), and says so.
    assert.equal(mine[0]!.status, "broken", JSON.stringify(mine[0]));
    assert.match(mine[0]!.message, /watchdog .*heartbeats did not reach the node/);
    assert.ok(mine[0]!.stopMs > stoppedAt, "judged after the stall");
    // The other node was not disturbed.
    assert.deepEqual(
      stress(s, "sim02").map((x) => x.status),
      ["passed"],
    );
  });

  it("a login shell that takes 6 s does not fail a 5 s workload (the deadline starts on the node)", async () => {
    const rec = simNodeRecord(c.inventoryPath, "sim02");
    const cfg = join(rec.dir, "sshd_config");
    const before = readFileSync(cfg, "utf8");
    // Every channel first pays 6 s, as a slow site profile (modules, conda, LDAP) makes it pay:
    // more than the stress's 5 s grace, so a deadline counted from the channel's opening
    // (5 s + 5 s) would kill it, and one counted from the command's start on the node fits.
    writeFileSync(cfg, `${before}ForceCommand sleep 6; exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`);
    const listener = readPid(join(rec.dir, "sshd.pid"))!;
    process.kill(listener, "SIGHUP");
    await new Promise((r) => setTimeout(r, 500));
    try {
      // sshd sets SSH_ORIGINAL_COMMAND only under a ForceCommand: the slow one is in force
      // (shown without a clock, which a loaded machine would make say anything).
      const probe = await cli(
        "exec",
        ...["-i", c.inventoryPath, "--nodes", "sim02", "--", "printenv", "SSH_ORIGINAL_COMMAND"],
      );
      assert.equal(probe.code, 0, probe.stderr);
      assert.match(probe.stdout, /^sim02: \S/, "the login goes through the slow ForceCommand");
      const doc = await cli(
        "doctor",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim02",
        "--timeout",
        "30",
        "--json",
      );
      const login = (JSON.parse(doc.stdout) as { nodes: { loginMs: number | null }[] }).nodes[0]
        ?.loginMs;
      assert.ok(
        login !== null && login !== undefined && login >= 6000,
        `doctor reports the login shell: ${login} ms`,
      );
      const r = await cli(
        "run",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim02",
        "--duration",
        "5",
        "--out",
        join(c.dir, "slow"),
        "--db",
        join(c.dir, "s.db"),
        "--json",
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.deepEqual(
        stress(json(r.stdout), "sim02").map((x) => [x.status]),
        [["passed"]],
      );
    } finally {
      writeFileSync(cfg, before);
      process.kill(listener, "SIGHUP");
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  it("a login shell that writes to stderr first: the command's output is its own, a timeout still kills it all", async () => {
    const rec = simNodeRecord(c.inventoryPath, "sim02");
    const cfg = join(rec.dir, "sshd_config");
    const before = readFileSync(cfg, "utf8");
    // What site profiles print before any command (Lmod, `pyenv: cannot rehash`, quota
    // warnings): stderr lines ahead of the wrapper's own first line.
    writeFileSync(
      cfg,
      `${before}ForceCommand echo 'Lmod: loading cuda/12.4' >&2; echo 'quota: 91% of /home used' >&2; exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`,
    );
    const listener = readPid(join(rec.dir, "sshd.pid"))!;
    process.kill(listener, "SIGHUP");
    await new Promise((r) => setTimeout(r, 500));
    try {
      const r = await cli(
        "exec",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim02",
        "--json",
        "--",
        "echo out; echo err >&2",
      );
      assert.equal(r.code, 0, r.stderr);
      const n = (JSON.parse(r.stdout) as { nodes: { stdout: string; stderr: string }[] }).nodes[0]!;
      assert.equal(n.stdout, "out\n");
      assert.match(n.stderr, /Lmod: loading cuda\/12\.4\nquota: 91% of \/home used\n/);
      assert.match(n.stderr, /err\n$/);
      assert.doesNotMatch(n.stderr, /@@slicecheck/, "the wrapper's marker stays internal");
      // The marker found after the noise gives the process group: a timeout kills the
      // command and what it started in the background.
      const t = await cli(
        "exec",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim02",
        "--timeout",
        "2",
        "--",
        "sleep 37 & sleep 38",
      );
      assert.equal(t.code, 124, t.stderr);
      assert.ok(
        await waitFor(() => {
          const left = readdirSync("/proc").filter((d) => {
            try {
              return /^sleep 3[78]/.test(
                readFileSync(`/proc/${d}/cmdline`, "utf8").replace(/\0/g, " "),
              );
            } catch {
              return false;
            }
          });
          return left.length === 0;
        }, 10_000),
        "nothing of the timed-out command is left",
      );
    } finally {
      writeFileSync(cfg, before);
      process.kill(listener, "SIGHUP");
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  it("a lock left behind by a killed holder is taken over, and the run says whose", async () => {
    const rec = simNodeRecord(c.inventoryPath, "sim01");
    // What a holder killed with -9 leaves: the info file, and no process holding the flock.
    const info = {
      runId: "sc-20261130T000000Z-dead00",
      command: "run --suites stress",
      controller: "ci-runner-7",
      pid: 4242,
      started: "2026-11-30T00:00:00.000Z",
    };
    writeFileSync(join(rec.dir, "state", "node.lock.json"), `${JSON.stringify(info)}\n`);
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      "--duration",
      "1",
      "--out",
      join(c.dir, "takeover"),
      "--db",
      join(c.dir, "s.db"),
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(
      r.stderr,
      /sim01: took over the lock of run sc-20261130T000000Z-dead00 \(from ci-runner-7, since 2026-11-30T00:00:00\.000Z\): its holder is gone/,
    );
  });
});
