// The SSH transport against real sshd processes (the simulated nodes), never a mocked transport.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { Client, type ConnectConfig } from "ssh2";
import { childrenOf, freePort, readPid, startSshd, stopSshd } from "../../sim/src/sshd.js";
import { isSlicecheckError } from "../../src/errors.js";
import type { NodeSpec } from "../../src/inventory/types.js";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId } from "../../src/transport/open.js";
import { HEARTBEAT_TIMEOUT_S } from "../../src/transport/remote-scripts.js";
import { MAX_CHANNELS, SshTransport } from "../../src/transport/ssh.js";
import { startCluster, type TestCluster, taggedPids, waitFor } from "../helpers/cluster.js";

describe("ssh transport (real sshd)", function () {
  this.timeout(90_000);
  let cluster: TestCluster;
  let a: NodeSpec;
  let b: NodeSpec;
  const open: SshTransport[] = [];
  const transport = (node: NodeSpec, runId = newRunId()) => {
    const t = new SshTransport(node, { runId, attempts: 1 });
    open.push(t);
    return t;
  };
  const tagOf = (run: string) => `SLICECHECK_RUN=${runTagFor(run, a.name)}`;

  before(async () => {
    cluster = await startCluster(2);
    [a, b] = cluster.inventory.nodes as [NodeSpec, NodeSpec];
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
  });
  after(async () => {
    await cluster?.stop();
  });

  it("returns exit code, stdout and stderr, and reuses one connection", async () => {
    const t = transport(a);
    const r = await t.exec({ shell: "echo out; echo err >&2; exit 7" });
    assert.deepEqual([r.exitCode, r.stdout, r.stderr, r.timedOut], [7, "out\n", "err\n", false]);
    assert.ok(r.pgid && r.pgid > 1, "the wrapper reported the command's process group");
    const pids = await Promise.all([1, 2, 3].map(() => t.exec({ shell: "echo $PPID" })));
    const sessions = childrenOf(readPid(join(cluster.dir, ".sim.d/nodes/sim01/sshd.pid"))!);
    assert.equal(
      sessions.length,
      1,
      "all commands went over one connection (one sshd session process)",
    );
    assert.equal(pids.length, 3);
  });

  it("passes hostile arguments and env values through literally", async () => {
    const t = transport(a);
    const marker = join(cluster.dir, "pwned");
    const hostile = [
      `$(touch ${marker})`,
      `; touch ${marker}`,
      `\`touch ${marker}\``,
      "it's",
      "a\nb",
    ];
    const r = await t.exec(
      { argv: ["printf", "%s|", ...hostile] },
      { env: { X: `'; touch ${marker}; '` } },
    );
    assert.equal(r.stdout, `${hostile.join("|")}|`);
    const env = await t.exec(
      { argv: ["sh", "-c", 'printf %s "$X"'] },
      { env: { X: `$(touch ${marker})` } },
    );
    assert.equal(env.stdout, `$(touch ${marker})`);
    assert.equal(existsSync(marker), false, "no injected command ran");
    await assert.rejects(
      t.exec({ argv: ["true"] }, { env: { "A;B": "x" } }),
      /invalid environment variable name/,
    );
  });

  it(`queues commands beyond ${MAX_CHANNELS} channels per connection and runs them all`, async () => {
    const t = transport(a);
    const log = join(cluster.dir, "overlap.log");
    rmSync(log, { force: true });
    // Each command holds until 8 have started (so the budget is used whatever the load), then
    // waits a little for a 9th, which only a transport over its budget lets in while these run.
    const starts = `$(grep -c s ${log})`;
    const hold = `until [ "${starts}" -ge ${MAX_CHANNELS} ]; do sleep 0.05; done`;
    const extra = `i=0; while [ "${starts}" -le ${MAX_CHANNELS} ] && [ $i -lt 10 ]; do sleep 0.1; i=$((i+1)); done`;
    const rs = await Promise.all(
      Array.from({ length: 15 }, () =>
        t.exec({ shell: `echo s >> ${log}; ${hold}; ${extra}; echo e >> ${log}` }),
      ),
    );
    assert.ok(
      rs.every((r) => r.exitCode === 0),
      "all 15 commands succeeded",
    );
    let now = 0;
    let peak = 0;
    for (const l of readFileSync(log, "utf8").trim().split("\n")) {
      now += l === "s" ? 1 : -1;
      peak = Math.max(peak, now);
    }
    assert.equal(
      peak,
      MAX_CHANNELS,
      "never more than the channel budget at once, and the budget is used",
    );
  });

  it(`keeps a command alive past the watchdog's ${HEARTBEAT_TIMEOUT_S} s with its heartbeats`, async () => {
    // The heartbeats are the command's only defence against its own watchdog: without them it
    // is killed by SIGHUP (no exit code, no output) once HEARTBEAT_TIMEOUT_S pass.
    const t = transport(b);
    const s = HEARTBEAT_TIMEOUT_S + 3;
    const r = await t.exec({ shell: `sleep ${s}; echo slept` }, { timeoutMs: (s + 30) * 1000 });
    assert.deepEqual([r.exitCode, r.stdout, r.timedOut], [0, "slept\n", false], r.stderr);
  });

  it("kills a command tree at its deadline and reports the timeout", async () => {
    const run = newRunId();
    const t = transport(a, run);
    // The sleeps outlast this test's own timeout, so exec returning at all means the deadline
    // ended the command (no clock bound: a loaded machine must not fail it).
    const r = await t.exec({ shell: "sleep 300 & sleep 300 & wait" }, { timeoutMs: 1500 });
    assert.equal(r.timedOut, true);
    assert.deepEqual(
      taggedPids(`SLICECHECK_RUN=${runTagFor(run, a.name)}`),
      [],
      "no process of the tree survived",
    );
  });

  it("a start gate starts commands launched seconds apart together, and leaves nothing on the node", async () => {
    const t = transport(a);
    const gate = { key: `t${Date.now()}`, count: 3, waitS: 20 };
    let lastLaunchS = 0;
    const launch = (delayMs: number) =>
      new Promise((r) => setTimeout(r, delayMs)).then(() => {
        lastLaunchS = Math.max(lastLaunchS, Date.now() / 1000);
        return t.exec({ shell: "sleep 1" }, { record: true, gate, timeoutMs: 40_000 });
      });
    const rs = await Promise.all([0, 1500, 3000].map(launch));
    // Started together: none before the last one was even launched (an order on this machine's
    // clock, which the local nodes share, not a bound that load could break).
    const starts = rs.map((r) => r.endRecord!.startS);
    assert.ok(
      Math.min(...starts) >= lastLaunchS,
      `starts ${starts.join(", ")}, last launched at ${lastLaunchS}`,
    );
    assert.ok(rs.every((r) => r.exitCode === 0 && r.endRecord!.elapsedMs >= 1000));
    assert.equal(
      existsSync(`/tmp/slicecheck-gate.${gate.key}`),
      false,
      "the gate's folder is gone",
    );
    // One member short: the others wait out the gate, then start alone (never hang).
    const lone = await t.exec(
      { shell: "true" },
      { record: true, gate: { ...gate, key: `${gate.key}b`, waitS: 1 }, timeoutMs: 20_000 },
    );
    assert.equal(lone.exitCode, 0);
    await assert.rejects(
      t.exec({ shell: "true" }, { record: true, gate: { ...gate, key: "../x" } }),
      /invalid gate key/,
    );
  });

  it("kills a command tree on cancel, for a root login too (kill over a second channel)", async () => {
    const run = newRunId();
    const t = transport(a, run);
    const ac = new AbortController();
    const p = t.exec(
      { shell: "sh -c 'sleep 300' & sleep 300 & wait" },
      { signal: ac.signal, timeoutMs: 60_000 },
    );
    const tag = `SLICECHECK_RUN=${runTagFor(run, a.name)}`;
    assert.ok(await waitFor(() => taggedPids(tag).length >= 3, 10_000), "the tree is running");
    ac.abort("SIGINT");
    await assert.rejects(
      p,
      (e: unknown) =>
        isSlicecheckError(e, "INTERRUPTED") &&
        e.context.cancelled === true &&
        /: interrupted \(SIGINT\): the command was stopped before it ended$/.test(e.message) &&
        !/cancelled|timeout/i.test(e.message),
    );
    assert.deepEqual(taggedPids(tag), []);
  });

  it("refuses an unknown host key, and a changed one, before logging in", async () => {
    const empty = join(cluster.dir, "empty_known_hosts");
    writeFileSync(empty, "");
    await assert.rejects(
      transport({ ...a, knownHosts: empty }).connect(),
      (e: unknown) => isSlicecheckError(e, "HOST_KEY_UNKNOWN") && /SHA256:/.test(e.message),
    );
    const wrong = join(cluster.dir, "wrong_known_hosts");
    const other = readFileSync(
      join(cluster.dir, ".sim.d/nodes/sim02/ssh_host_ed25519_key.pub"),
      "utf8",
    ).split(" ");
    writeFileSync(wrong, `[${a.host}]:${a.port} ${other[0]} ${other[1]}\n`);
    await assert.rejects(
      transport({ ...a, knownHosts: wrong }).connect(),
      (e: unknown) => isSlicecheckError(e, "HOST_KEY_CHANGED") && /line 1/.test(e.message),
    );
    await assert.rejects(
      transport({ ...a, knownHosts: wrong, hostKeyPolicy: "accept-new" }).connect(),
      (e: unknown) => isSlicecheckError(e, "HOST_KEY_CHANGED"),
      "accept-new never accepts a changed key",
    );
  });

  it("refuses a known host presenting a key of another type, under every policy", async () => {
    // A second real sshd for sim01's files, offering only an ECDSA host key where known_hosts
    // records the ed25519 one: what OpenSSH calls REMOTE HOST IDENTIFICATION HAS CHANGED.
    const dir = join(cluster.dir, "ecdsa-sshd");
    mkdirSync(dir, { recursive: true });
    execFileSync("ssh-keygen", ["-q", "-t", "ecdsa", "-N", "", "-f", join(dir, "host_ecdsa")]);
    const port = await freePort(a.host);
    const base = readFileSync(join(cluster.dir, ".sim.d/nodes/sim01/sshd_config"), "utf8");
    const config = join(dir, "sshd_config");
    writeFileSync(
      config,
      base
        .replace(/^ListenAddress .*$/m, `ListenAddress ${a.host}:${port}`)
        .replace(/^HostKey .*$/m, `HostKey ${join(dir, "host_ecdsa")}`)
        .replace(/^PidFile .*$/m, `PidFile ${join(dir, "sshd.pid")}`),
    );
    const pid = await startSshd(dir, config);
    try {
      const ed = readFileSync(
        join(cluster.dir, ".sim.d/nodes/sim01/ssh_host_ed25519_key.pub"),
        "utf8",
      ).split(" ");
      const kh = join(dir, "known_hosts");
      writeFileSync(kh, `# sim01 as first seen\n[${a.host}]:${port} ${ed[0]} ${ed[1]}\n`);
      for (const policy of ["strict", "accept-new"] as const) {
        await assert.rejects(
          transport({ ...a, port, knownHosts: kh, hostKeyPolicy: policy }).connect(),
          (e: unknown) =>
            isSlicecheckError(e, "HOST_KEY_CHANGED") &&
            /presented an ecdsa-sha2-nistp256 key .*only an ssh-ed25519 key is recorded in .* line 2/.test(
              e.message,
            ) &&
            e.message.includes(`ssh-keygen -R '[${a.host}]:${port}' -f ${kh}`) &&
            !/is not in/.test(e.message),
          `${policy}: a key of another type is a changed key`,
        );
      }
      assert.equal(
        readFileSync(kh, "utf8").split("\n").filter(Boolean).length,
        2,
        "accept-new recorded nothing",
      );
      // The same server is fine once its key is what known_hosts holds.
      const ecdsa = readFileSync(join(dir, "host_ecdsa.pub"), "utf8").split(" ");
      writeFileSync(kh, `[${a.host}]:${port} ${ecdsa[0]} ${ecdsa[1]}\n`);
      const r = await transport({ ...a, port, knownHosts: kh }).exec({ argv: ["echo", "ok"] });
      assert.equal(r.stdout, "ok\n");
    } finally {
      await stopSshd(pid, config);
    }
  });

  it("records a new host key with accept-new, then trusts it", async () => {
    const kh = join(cluster.dir, "new_known_hosts");
    rmSync(kh, { force: true });
    await transport({ ...a, knownHosts: kh, hostKeyPolicy: "accept-new" }).connect();
    const pub = readFileSync(
      join(cluster.dir, ".sim.d/nodes/sim01/ssh_host_ed25519_key.pub"),
      "utf8",
    ).split(" ");
    assert.equal(readFileSync(kh, "utf8"), `[${a.host}]:${a.port} ${pub[0]} ${pub[1]}\n`);
    const r = await transport({ ...a, knownHosts: kh }).exec({ argv: ["true"] });
    assert.equal(r.exitCode, 0);
  });

  it("verifies against a hashed known_hosts file", async () => {
    const kh = join(cluster.dir, "hashed_known_hosts");
    copyFileSync(join(cluster.dir, ".sim.d/known_hosts"), kh);
    execFileSync("ssh-keygen", ["-H", "-f", kh], { stdio: "ignore" });
    assert.doesNotMatch(readFileSync(kh, "utf8"), /127\.0\.0/);
    const r = await transport({ ...a, knownHosts: kh }).exec({ argv: ["echo", "ok"] });
    assert.equal(r.stdout, "ok\n");
  });

  it("reaches a node through a jump host (forwardOut)", async () => {
    const viaJump: NodeSpec = { ...b, jump: [{ ...a }] };
    const t = transport(viaJump);
    const r = await t.exec({ shell: "echo $SSH_CONNECTION" });
    assert.equal(r.exitCode, 0);
    // The target sees the connection coming from the bastion's side, not from us directly.
    assert.match(
      r.stdout,
      new RegExp(`^127\\.0\\.0\\.1 \\d+ ${b.host.replaceAll(".", "\\.")} ${b.port}`),
    );
  });

  it("turns Nagle's algorithm off on the TCP connection it makes, direct or to a jump host", async () => {
    // Not a timing (benches measure those): what each connection's socket was told. With
    // Nagle on, a small request sent before sshd acknowledged the last waited 40 ms for its
    // delayed ACK, the handshake's SERVICE_REQUEST on every connection.
    const told: { tcp: boolean; on: boolean }[] = [];
    const original = Client.prototype.setNoDelay;
    Client.prototype.setNoDelay = function (this: Client & { _sock?: unknown }, on?: boolean) {
      told.push({ tcp: this._sock instanceof Socket, on: on !== false });
      return original.call(this, on);
    };
    try {
      assert.equal((await transport(a).exec({ shell: "true" })).exitCode, 0);
      assert.deepEqual(told, [{ tcp: true, on: true }], "the direct connection");
      told.length = 0;
      const viaJump: NodeSpec = { ...b, jump: [{ ...a }] };
      assert.equal((await transport(viaJump).exec({ shell: "true" })).exitCode, 0);
      // The node's connection rides a channel of the jump host's, whose TCP carries it.
      assert.deepEqual(told, [
        { tcp: true, on: true },
        { tcp: false, on: true },
      ]);
    } finally {
      Client.prototype.setNoDelay = original;
    }
  });

  it("logs in with its key at its first request, where ssh2 would ask for method 'none' first", async () => {
    // What the client sent, from ssh2's own trace of each connection.
    const sent: string[] = [];
    const original = Client.prototype.connect;
    Client.prototype.connect = function (this: Client, cfg: ConnectConfig) {
      const debug = cfg.debug;
      return original.call(this, {
        ...cfg,
        debug: (msg: string) => {
          const m = /^Outbound: Sending USERAUTH_REQUEST \((.*)\)$/.exec(msg);
          if (m) sent.push(m[1]!);
          debug?.(msg);
        },
      });
    };
    try {
      assert.equal((await transport(a).exec({ shell: "true" })).exitCode, 0);
    } finally {
      Client.prototype.connect = original;
    }
    // The key's query (is it accepted?), then the signed request.
    assert.deepEqual(sent, ["publickey -- check", "publickey"]);
  });

  it("decrypts a key with the passphrase from the variable the inventory names", async () => {
    const key = join(cluster.dir, "enc_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "s3cret pass", "-f", key]);
    appendFileSync(join(cluster.dir, ".sim.d/authorized_keys"), readFileSync(`${key}.pub`));
    const node: NodeSpec = {
      ...a,
      identityFile: key,
      identityPassphraseEnv: "SLICECHECK_TEST_PASS",
    };
    delete process.env.SLICECHECK_TEST_PASS;
    await assert.rejects(
      transport(node).connect(),
      (e: unknown) =>
        isSlicecheckError(e, "KEY_FILE") &&
        /\$SLICECHECK_TEST_PASS, which is not set/.test(e.message),
    );
    process.env.SLICECHECK_TEST_PASS = "wrong";
    await assert.rejects(transport(node).connect(), (e: unknown) =>
      isSlicecheckError(e, "KEY_FILE"),
    );
    process.env.SLICECHECK_TEST_PASS = "s3cret pass";
    try {
      const r = await transport(node).exec({ argv: ["echo", "in"] });
      assert.equal(r.stdout, "in\n");
    } finally {
      delete process.env.SLICECHECK_TEST_PASS;
    }
  });

  it("authenticates through ssh-agent when no key file is given", async () => {
    const key = join(cluster.dir, "agent_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    appendFileSync(join(cluster.dir, ".sim.d/authorized_keys"), readFileSync(`${key}.pub`));
    const sock = join(cluster.dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", sock], { stdio: "ignore" });
    const saved = process.env.SSH_AUTH_SOCK;
    try {
      assert.ok(await waitFor(() => existsSync(sock), 5000), "ssh-agent is listening");
      execFileSync("ssh-add", [key], {
        env: { ...process.env, SSH_AUTH_SOCK: sock },
        stdio: "ignore",
      });
      process.env.SSH_AUTH_SOCK = sock;
      const r = await transport({ ...a, identityFile: join(cluster.dir, "no-such-key") })
        .connect()
        .then(
          () => "connected",
          (e: unknown) => (isSlicecheckError(e) ? e.code : String(e)),
        );
      assert.equal(
        r,
        "KEY_FILE",
        "a named key file that is missing is an error, not a silent fallback",
      );
      const ok = await transport({ ...a, identityFile: null }).exec({ argv: ["echo", "agent"] });
      assert.equal(ok.stdout, "agent\n");
      // A key file the node refuses: the agent's key is tried next.
      const refused = join(cluster.dir, "refused_key");
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", refused]);
      const next = await transport({ ...a, identityFile: refused }).exec({ argv: ["echo", "2nd"] });
      assert.equal(next.stdout, "2nd\n");
    } finally {
      if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
      else process.env.SSH_AUTH_SOCK = saved;
      agent.kill();
    }
  });

  it("reports a refused connection as CONNECT, naming the node", async () => {
    await assert.rejects(
      transport({ ...a, port: 1 }).connect(),
      (e: unknown) =>
        isSlicecheckError(e, "CONNECT") &&
        e.message.startsWith(`${a.name} `) &&
        /ECONNREFUSED/.test(e.message),
    );
  });

  it("a connection lost under a started process nobody awaits yet is no unhandled rejection (the controller lives)", async () => {
    const unhandled: unknown[] = [];
    const note = (e: unknown) => unhandled.push(e);
    // Mocha's own listener would turn it into this test's failure anyway; this one names it.
    process.on("unhandledRejection", note);
    const run = newRunId();
    try {
      const t = transport(a, run);
      await t.connect();
      const listener = readPid(join(cluster.dir, ".sim.d/nodes/sim01/sshd.pid"))!;
      const before = new Set(childrenOf(listener));
      // A raw channel has no watchdog: the tag lets `finally` stop the sleep its loss orphans.
      const proc = await t.start(`env ${tagOf(run)} sleep 300`);
      for (const pid of childrenOf(listener))
        if (!before.has(pid) || before.size > 0) process.kill(pid, "SIGKILL");
      // Planted: without the handler on `done`, the loss below rejects it with no one listening.
      const lostError = () => (t as unknown as { lostError: unknown }).lostError;
      assert.ok(await waitFor(() => lostError() !== null, 30_000), "the loss was noticed");
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(unhandled, []);
      await assert.rejects(proc.done, (e: unknown) => isSlicecheckError(e, "CONNECTION_LOST"));
      proc.end();
      await t.close();
    } finally {
      process.off("unhandledRejection", note);
      for (const pid of taggedPids(tagOf(run))) process.kill(pid, "SIGKILL");
    }
  });

  it("reports a connection dropped mid-command as an error, not a hang, and leaves nothing running", async () => {
    const run = newRunId();
    const t = transport(a, run);
    await t.connect();
    const listener = readPid(join(cluster.dir, ".sim.d/nodes/sim01/sshd.pid"))!;
    const before = new Set(childrenOf(listener));
    const p = t.exec({ argv: ["sleep", "300"] }, { timeoutMs: 120_000 });
    const tag = `SLICECHECK_RUN=${runTagFor(run, a.name)}`;
    assert.ok(await waitFor(() => taggedPids(tag).length > 0, 10_000));
    // Kill the sshd session process(es): the TCP connection drops under the client.
    for (const pid of childrenOf(listener))
      if (!before.has(pid) || before.size > 0) process.kill(pid, "SIGKILL");
    // `sleep 300` outlasts this test's timeout: the rejection itself shows the loss was noticed
    // without waiting for the command (the time it takes is a figure of `BENCH=transport`).
    await assert.rejects(p, (e: unknown) => isSlicecheckError(e, "CONNECTION_LOST"));
    assert.ok(
      await waitFor(() => taggedPids(tag).length === 0, 60_000),
      "the watchdog killed the orphaned command",
    );
  });

  it("leaves no process with its run tag after the controller is SIGKILLed mid-command", async () => {
    const run = newRunId();
    const tag = `SLICECHECK_RUN=${runTagFor(run, a.name)}`;
    const script = `
      import { loadInventory } from ${JSON.stringify(join(process.cwd(), "src/inventory/load.ts"))};
      import { SshTransport } from ${JSON.stringify(join(process.cwd(), "src/transport/ssh.ts"))};
      const node = loadInventory(${JSON.stringify(cluster.inventoryPath)}, { sshConfig: null }).nodes[0];
      const t = new SshTransport(node, { runId: ${JSON.stringify(run)} });
      await t.exec({ shell: "sleep 300 & sleep 300; wait" }, { timeoutMs: 600000 });`;
    const file = join(cluster.dir, "controller.mts");
    writeFileSync(file, script);
    const child = spawn(process.execPath, ["--import", "tsx", file], { stdio: "ignore" });
    assert.ok(
      await waitFor(() => taggedPids(tag).length >= 2, 20_000),
      "the controller started its remote commands",
    );
    child.kill("SIGKILL");
    // The watchdog sees its channel close and kills the tree; how long that takes is a figure
    // of `BENCH=transport`, not an assertion (the wait below only bounds a hang).
    assert.ok(
      await waitFor(() => taggedPids(tag).length === 0, 60_000),
      "nothing of the run is left once the controller is gone",
    );
  });
});
