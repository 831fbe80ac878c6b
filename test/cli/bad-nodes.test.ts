// Nodes that fail at every phase of an SSH connection, beside healthy simulated nodes (real
// sshd): each bad one becomes its own error with a stable code, the healthy ones finish, and
// the controller neither crashes nor prints a stack trace.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../sim/src/tools.js";
import { isSlicecheckError } from "../../src/errors.js";
import { loadInventory } from "../../src/inventory/load.js";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import {
  BAD_MODES,
  type BadMode,
  type BadServer,
  closedPort,
  startBadServer,
} from "../helpers/bad-server.js";
import { useCluster } from "../helpers/cluster.js";

/** The code and phase each misbehaviour must come out as. */
const EXPECTED: Record<BadMode | "stopped", { code: string; phase: string; text: RegExp }> = {
  silent: { code: "HANDSHAKE", phase: "identification", text: /sent no SSH identification/ },
  "close-on-accept": {
    code: "HANDSHAKE",
    phase: "identification",
    text: /closed the connection before its SSH identification/,
  },
  "garbage-banner": {
    code: "HANDSHAKE",
    phase: "identification",
    text: /sent no SSH identification/,
  },
  "trickled-banner": {
    code: "HANDSHAKE",
    phase: "identification",
    text: /sent no SSH identification within 2 s/,
  },
  "stop-after-banner": {
    code: "HANDSHAKE",
    phase: "key-exchange",
    text: /closed the connection during the key exchange/,
  },
  stopped: { code: "CONNECT", phase: "tcp", text: /ECONNREFUSED.*Is sshd running/ },
};

function runBin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(PACKAGE_ROOT, "bin/slicecheck.js"), ...args],
      { timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** What a crash or an unhandled error would print. */
const STACK = /^\s+at .+:\d+:\d+\)?$|Unhandled 'error' event|internal error/m;

describe("misbehaving nodes beside healthy ones (real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster(2);
  const bad: BadServer[] = [];
  let inv = "";
  let stoppedPort = 0;

  before(async () => {
    for (const mode of BAD_MODES) bad.push(await startBadServer(mode));
    stoppedPort = await closedPort();
    const n = c.inventory.nodes[0]!;
    const lines = [
      `defaults: {user: ${n.user}, identity_file: ${n.identityFile}, known_hosts: ${n.knownHosts}, ssh_config: none, connect_timeout: 2}`,
      "nodes:",
      ...c.inventory.nodes.map((h) => `  ${h.name}: {host: ${h.host}, port: ${h.port}}`),
      ...bad.map((b) => `  bad-${b.mode}: {host: ${b.host}, port: ${b.port}}`),
      `  bad-stopped: {host: 127.0.0.1, port: ${stoppedPort}}`,
    ];
    inv = join(c.dir, "with-bad-nodes.yaml");
    writeFileSync(inv, `${lines.join("\n")}\n`);
  });
  after(async () => {
    await Promise.all(bad.map((b) => b.close()));
  });

  it("turns each failure phase into that node's error with a stable code", async () => {
    const nodes = loadInventory(inv, { sshConfig: null }).nodes.filter((n) =>
      n.name.startsWith("bad-"),
    );
    const got = await Promise.all(
      nodes.map(async (node) => {
        const t = new SshTransport(node, { runId: newRunId(), attempts: 1 });
        try {
          await t.exec({ argv: ["true"] });
          return { node: node.name, ok: true };
        } catch (e) {
          assert.ok(isSlicecheckError(e), `${node.name}: ${String(e)}`);
          return { node: node.name, code: e.code, phase: e.context.phase, message: e.message };
        } finally {
          await t.close();
        }
      }),
    );
    for (const g of got) {
      const want = EXPECTED[g.node.slice("bad-".length) as BadMode | "stopped"];
      assert.equal(g.code, want.code, `${g.node}: ${g.message}`);
      assert.equal(g.phase, want.phase, `${g.node}: ${g.message}`);
      assert.match(g.message!, want.text, g.node);
      assert.ok(g.message!.startsWith(`${g.node} `), "the message names the node first");
    }
    assert.ok(
      bad.every((b) => b.accepted > 0),
      "every bad server was really connected to",
    );
  });

  it("exec finishes the healthy nodes, names every bad one, exits 2, no stack trace", async () => {
    const r = await runBin(["exec", "-i", inv, "--", "echo", "hi"]);
    assert.equal(r.code, 2, r.stderr);
    for (const h of c.inventory.nodes) assert.match(r.stdout, new RegExp(`^${h.name} *: hi$`, "m"));
    for (const [mode, want] of Object.entries(EXPECTED)) {
      assert.match(
        r.stderr,
        new RegExp(`^bad-${mode} *: slicecheck: \\[${want.code}\\] bad-${mode} `, "m"),
      );
    }
    assert.doesNotMatch(r.stdout + r.stderr, STACK);
  });

  it("doctor checks the healthy nodes and reports each bad one as a problem (exit 2)", async () => {
    const r = await runBin(["doctor", "-i", inv, "--json"]);
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, STACK);
    const nodes = JSON.parse(r.stdout).nodes as {
      name: string;
      reachable: boolean;
      driver: string | null;
      problems: string[];
    }[];
    for (const n of nodes) {
      if (n.name.startsWith("bad-")) {
        const want = EXPECTED[n.name.slice(4) as BadMode | "stopped"];
        assert.equal(n.reachable, false, n.name);
        assert.match(n.problems.join("\n"), want.text, n.name);
        assert.match(n.problems.join("\n"), new RegExp(`\\[${want.code}\\]`), n.name);
      } else {
        assert.deepEqual([n.reachable, n.driver, n.problems], [true, "580.65.06", []], n.name);
      }
    }
    assert.equal(nodes.length, c.inventory.nodes.length + BAD_MODES.length + 1);
  });

  it("apply --dry-run and run finish the healthy nodes and name each bad one (exit 2)", async () => {
    const layout = join(PACKAGE_ROOT, "fixtures/layouts/default.yaml");
    const dry = await runBin(["apply", "-i", inv, layout, "-c", "all-balanced", "--dry-run"]);
    assert.equal(dry.code, 2, dry.stderr);
    assert.doesNotMatch(dry.stdout + dry.stderr, STACK);
    for (const [mode, want] of Object.entries(EXPECTED))
      assert.match(dry.stderr, new RegExp(`^bad-${mode}: unreachable: .*\\[${want.code}\\]`, "m"));
    for (const h of c.inventory.nodes)
      assert.match(dry.stdout, new RegExp(`^${h.name} GPU 0 `, "m"));

    const r = await runBin([
      "run",
      "-i",
      inv,
      "--duration",
      "1",
      "--out",
      join(c.dir, "run-out"),
      "--db",
      join(c.dir, "run.db"),
      "--no-allure",
      "--json",
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, STACK);
    const s = JSON.parse(r.stdout) as {
      checks: { suite: string; node: string | null; status: string; message: string }[];
    };
    assert.deepEqual(
      s.checks.filter((x) => x.suite === "stress" && x.status === "passed").map((x) => x.node),
      c.inventory.nodes.map((h) => h.name),
      "every healthy node ran its stress",
    );
    for (const [mode, want] of Object.entries(EXPECTED)) {
      const p = s.checks.find((x) => x.suite === "run" && x.node === `bad-${mode}`);
      assert.match(p?.message ?? "", new RegExp(`^\\[${want.code}\\] bad-${mode} `), mode);
    }
  });

  it("cleanup lists the healthy nodes and names the unreachable ones (exit 2)", async () => {
    const r = await runBin(["cleanup", "-i", inv, "--run", newRunId()]);
    assert.equal(r.code, 2, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, STACK);
    for (const h of c.inventory.nodes)
      assert.match(r.stdout, new RegExp(`^${h.name}: nothing left by `, "m"));
    for (const [mode, want] of Object.entries(EXPECTED))
      assert.match(r.stderr, new RegExp(`^bad-${mode}: .*\\[${want.code}\\]`, "m"));
  });
});
