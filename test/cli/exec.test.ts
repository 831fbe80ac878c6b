import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

/** Pids of this machine's processes whose command line is exactly `argv`. */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join("\0")}\0`;
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "latin1") === want;
      } catch {
        return false; // gone, or not ours to read
      }
    })
    .map(Number);
}

describe("slicecheck exec / cleanup / sim status (real sshd)", function () {
  this.timeout(90_000);
  const c = useCluster(3);

  it("prints each node's lines prefixed by its name, stderr apart", async () => {
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--",
      "sh",
      "-c",
      "echo one; echo two; echo bad >&2",
    );
    assert.equal(r.code, 0);
    // Lines come as the nodes print them (test/cli/exec-pdsh.test.ts): each node's in order.
    const lines = r.stdout.trim().split("\n");
    for (const n of ["sim01", "sim02", "sim03"])
      assert.deepEqual(
        lines.filter((l) => l.startsWith(`${n}: `)),
        [`${n}: one`, `${n}: two`],
      );
    assert.equal(lines.length, 6);
    // The login shell's start-up files may write to stderr too (CI's root runs `pyenv init` in
    // .bashrc, whose rehash races between nodes): they pass through as ssh shows them, each
    // line still under its node's name; the command's own stderr lines are exactly these.
    const errs = r.stderr.trim().split("\n");
    assert.deepEqual(errs.filter((l) => l.endsWith(": bad")).sort(), [
      "sim01: bad",
      "sim02: bad",
      "sim03: bad",
    ]);
    for (const l of errs) assert.match(l, /^sim0[123]: /);
  });

  it("runs one argument through the node's shell, as ssh and pdsh do", async () => {
    const r = await cli("exec", "-i", c.inventoryPath, "--", "nvidia-smi -L | wc -l");
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n").sort(), ["sim01: 1", "sim02: 1", "sim03: 1"]);
  });

  it("quotes several arguments one by one", async () => {
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      "--",
      "echo",
      "a  b",
      "$HOME",
      "it's",
    );
    assert.equal(r.stdout, "sim01: a  b $HOME it's\n");
  });

  it("leaves out nodes with -x and !term, and refuses empty selectors with exit 3", async () => {
    const names = (out: string) =>
      out
        .trim()
        .split("\n")
        .map((l) => l.split(":")[0]);
    const a = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--nodes",
      "all,!sim02",
      "--",
      "true; echo x",
    );
    assert.deepEqual(names(a.stdout).sort(), ["sim01", "sim03"]);
    const b = await cli("exec", "-i", c.inventoryPath, "-x", "sim0[1-2]", "--", "echo x");
    assert.deepEqual(names(b.stdout), ["sim03"]);
    const e = await cli("exec", "-i", c.inventoryPath, "--nodes", "", "--", "true");
    assert.equal(e.code, 3);
    assert.match(e.stderr, /--nodes "": is empty/);
    const t = await cli("exec", "-i", c.inventoryPath, "--nodes", "sim01,,sim02", "--", "true");
    assert.equal(t.code, 3);
    assert.match(t.stderr, /has an empty term/);
  });

  it("-b gathers identical outputs under their folded node list, like clush -b", async () => {
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "-b",
      "--",
      'case "$SSH_CONNECTION" in *" 127.0.0.11 "*) echo other; exit 4;; esac; echo same; echo two',
    );
    assert.equal(r.code, 4);
    assert.equal(
      r.stdout,
      [
        "---------------",
        "sim[01,03] (2)",
        "---------------",
        "same",
        "two",
        "---------------",
        "sim02 (1)",
        "---------------",
        "other",
        "",
      ].join("\n"),
    );
    assert.match(r.stderr, /slicecheck: sim02: exited with exit code 4/);
  });

  it("runs an ansible_connection: local host on this machine, without ssh", async () => {
    const inv = join(c.dir, "local.ini");
    // Port 1 on an address nothing listens on: ssh would fail, the local transport never tries.
    writeFileSync(inv, "ctl ansible_connection=local ansible_host=127.0.0.250 ansible_port=1\n");
    const r = await cli("exec", "-i", inv, "--", "echo $((40 + 2)) $SLICECHECK_RUN");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ctl: 42 sc-\S+@ctl\n$/);
  });

  it("exits with the worst exit code of the nodes, and gives JSON", async () => {
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--json",
      "--",
      "sh",
      "-c",
      'case "$SSH_CONNECTION" in *127.0.0.11*) exit 5;; *127.0.0.12*) exit 2;; esac; echo fine',
    );
    assert.equal(r.code, 5);
    const j = JSON.parse(r.stdout) as {
      nodes: { name: string; exitCode: number; stdout: string; error: string | null }[];
    };
    assert.deepEqual(
      j.nodes.map((n) => [n.name, n.exitCode, n.stdout, n.error]),
      [
        ["sim01", 0, "fine\n", null],
        ["sim02", 5, "", null],
        ["sim03", 2, "", null],
      ],
    );
  });

  it("reports a timeout per node as 124 and kills the command", async () => {
    // The sleep outlasts this test's timeout, so the CLI returning at all means the deadline
    // ended it; its odd length names it among this machine's processes (the nodes are local).
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim02",
      "--timeout",
      "1",
      "--json",
      "--",
      "sleep",
      "599.25",
    );
    assert.equal(r.code, 124);
    assert.match(JSON.parse(r.stdout).nodes[0].error, /timed out after 1 s/);
    assert.deepEqual(pidsRunning(["sleep", "599.25"]), [], "the command was killed");
  });

  it("refuses a bad selector with exit 3 before touching any node", async () => {
    const r = await cli("exec", "-i", c.inventoryPath, "--nodes", "sim0[1-4]", "--", "true");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /--nodes "sim0\[1-4\]": no node named 'sim04'/);
  });

  it("refuses a bad inventory with exit 3, naming file and line", async () => {
    const bad = join(c.dir, "bad.yaml");
    writeFileSync(bad, "nodes:\n  n1:\n    port: 0\n");
    const r = await cli("exec", "-i", bad, "--", "true");
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      new RegExp(`${bad.replaceAll("/", "\\/")}:3: nodes\\.n1\\.port: expected a port number`),
    );
  });

  it("reports an unreachable node as 2 while the others run", async () => {
    const inv = join(c.dir, "mixed.yaml");
    const n = c.inventory.nodes[0]!;
    writeFileSync(
      inv,
      `defaults: {user: ${n.user}, identity_file: ${n.identityFile}, known_hosts: ${n.knownHosts}, ssh_config: none, connect_timeout: 3}\nnodes:\n  up: {host: ${n.host}, port: ${n.port}}\n  down: {host: 127.0.0.250, port: 1}\n`,
    );
    const r = await cli("exec", "-i", inv, "--json", "--", "echo", "hi");
    assert.equal(r.code, 2);
    const j = JSON.parse(r.stdout);
    assert.equal(j.nodes[0].stdout, "hi\n");
    assert.match(j.nodes[1].error, /\[CONNECT\] down .*cannot connect: ECONNREFUSED/);
  });

  it("cleanup --run finds and kills what a run left behind", async () => {
    // Leave a tagged process behind the way a crashed controller would: started outside our
    // transport, with the run tag of a run that no longer exists. It drops the exec's own
    // command tag, so the exec's watchdog (which kills what its command leaves) cannot see it.
    const run = "sc-test-leftover";
    const n = c.inventory.nodes[0]!;
    const spawn = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--nodes",
      n.name,
      "--",
      "sh",
      "-c",
      // "started" only once the sleep runs in its own session with the tag: before that, the
      // forked child still carries the command's tag and group, and the exec's watchdog kills
      // both as the command ends (a loaded CI run of 5 December lost the leftover that way).
      `env -u SLICECHECK_CMD SLICECHECK_RUN=${run}@${n.name} setsid sleep 300 >/dev/null 2>&1 < /dev/null & ` +
        `i=0; until (for f in $(grep -lzxsF SLICECHECK_RUN=${run}@${n.name} /proc/[0-9]*/environ 2>/dev/null); do p=\${f#/proc/}; p=\${p%/environ}; [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ] && exit 0; done; exit 1); do i=$((i+1)); [ "$i" -gt 200 ] && break; sleep 0.05; done; echo started`,
    );
    assert.equal(spawn.stdout.trim(), `${n.name}: started`);
    // The exec's own watchdog only kills its own run's processes: the leftover survives it.
    const dry = await cli(
      "cleanup",
      "-i",
      c.inventoryPath,
      "--nodes",
      n.name,
      "--run",
      run,
      "--dry-run",
      "--json",
    );
    const found = JSON.parse(dry.stdout).nodes[0].found as { pid: number; command: string }[];
    assert.equal(found.length, 1);
    assert.match(found[0]!.command, /sleep 300/);
    const r = await cli(
      "cleanup",
      "-i",
      c.inventoryPath,
      "--nodes",
      n.name,
      "--run",
      run,
      "--json",
    );
    assert.equal(JSON.parse(r.stdout).nodes[0].killed, 1);
    const again = await cli("cleanup", "-i", c.inventoryPath, "--nodes", n.name, "--run", run);
    assert.match(again.stdout, /nothing left by sc-test-leftover/);
  });

  it("sim status --json gives the documented shape", async () => {
    const r = await cli("sim", "status", "--inventory", c.inventoryPath, "--json");
    const j = JSON.parse(r.stdout) as { nodes: Record<string, unknown>[] };
    assert.deepEqual(Object.keys(j.nodes[0]!).sort(), [
      "driver",
      "gpu",
      "gpus",
      "host",
      "name",
      "pid",
      "port",
    ]);
    assert.ok(j.nodes.every((n) => typeof n.pid === "number"));
    assert.deepEqual(
      j.nodes.map((n) => n.host),
      ["127.0.0.10", "127.0.0.11", "127.0.0.12"],
    );
  });
});

describe("slicecheck exec on twelve nodes (real sshd)", function () {
  this.timeout(90_000);
  const c = useCluster(12);

  it("fans out past ten nodes without Node's listener warning on the user's stderr", () => {
    // One abort listener per command on exec's one signal: Node printed
    // "MaxListenersExceededWarning: Possible EventTarget memory leak" from the eleventh on.
    const r = spawnSync(
      process.execPath,
      ["bin/slicecheck.js", "exec", "-i", c.inventoryPath, "--", "true"],
      { encoding: "utf8", timeout: 60_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /Warning/, r.stderr);
  });
});
