// The node-side supervisor, run through a local `sh` (LocalTransport is a RawShell and runs
// command lines as sshd would), both of them: perl's, which this machine's perl runs, and the
// shell's, on a PATH without perl. Two commands' output comes back byte-exact, with their exit
// codes; a deadline kills; and the watchdog's promise holds for every command it started: when
// its stdin ends (controller killed) or the heartbeats stop, they die of SIGHUP. A node without
// setsid refuses the shell's, one without timeout perl's, and their commands take a channel each,
// as without a supervisor; perl without its POSIX module hands over to the shell's.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { directStart } from "../../src/transport/direct-start.js";
import { LocalTransport } from "../../src/transport/local.js";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId } from "../../src/transport/open.js";
import { PGID_MARKER, wrapCommand } from "../../src/transport/remote-scripts.js";
import { escapeLine } from "../../src/transport/supervisor-script.js";
import type { RawProcess } from "../../src/transport/types.js";
import type { Instance } from "../../src/workloads/instances.js";
import { runOnInstances } from "../../src/workloads/launcher.js";
import { taggedPids, waitFor } from "../helpers/cluster.js";
import { nodeSpec } from "../helpers/node.js";
import { pathWithout } from "../helpers/path-without.js";
import { rawSupervisor as rawSup } from "../helpers/raw-supervisor.js";
import { tempDir } from "../helpers/tmp.js";

const here = nodeSpec("gpu-local", { host: "localhost", user: "ignored" });

/** A local node whose login shell first sets `env` (a PATH without some tools, say). */
function nodeWith(env: Record<string, string>) {
  const set = Object.entries(env)
    .map(([k, v]) => `${k}=${v}; export ${k}; `)
    .join("");
  return class extends LocalTransport {
    override start(line: string) {
      return super.start(`${set}${line}`);
    }
  };
}

/** The two supervisors, and the program each runs as on the node. */
const SHELL_PATH = pathWithout(["perl"]);
const IMPLS = [
  { name: "perl's", Node: LocalTransport, path: process.env.PATH ?? "", program: /^perl/ },
  {
    name: "the shell's",
    Node: nodeWith({ PATH: SHELL_PATH }),
    path: SHELL_PATH,
    program: /^(bash|dash)$/,
  },
] as const;

/** The supervisor spoken to in its own protocol (helpers/raw-supervisor.ts), on this node. */
const rawSupervisor = (t: LocalTransport, heartbeatS = 15, sudo = false) =>
  rawSup(t, here, heartbeatS, sudo);

/** A workload's line as the launcher wraps it for the supervisor, recorded, tagged `cmdTag`. */
function workload(t: LocalTransport, cmdTag: string, shell: string): string {
  const runTag = runTagFor(t.runId, here.name);
  return wrapCommand(
    { shell },
    { runTag, cmdTag, deadlineS: 60, sudo: false, record: true, noWatcher: true },
  );
}

/** `r` for a recorded workload, where the supervisor offers it; else the same as `s`. */
function directRequest(t: LocalTransport, cmdTag: string, shell: string, offered: boolean): string {
  const runTag = runTagFor(t.runId, here.name);
  const o = { runTag, cmdTag, deadlineS: 60, sudo: false, record: true, noWatcher: true };
  const r = directStart({ shell }, o);
  return offered && r
    ? `r ${cmdTag} ${escapeLine(r)}`
    : `s ${cmdTag} ${escapeLine(workload(t, cmdTag, shell))}`;
}

for (const { name, Node, path, program } of IMPLS)
  describe(`node supervisor, ${name} (through a local sh)`, function () {
    this.timeout(60_000);

    it("is the one that answers", async () => {
      const sup = await rawSupervisor(new Node(here, newRunId()));
      assert.match(sup.program, program);
      sup.p.end();
      await sup.p.done;
    });

    it("runs two commands at once: output byte-exact, exit codes, each in its own process group", async () => {
      const t = new Node(here, newRunId());
      const s = await t.supervise();
      assert.equal(s.fallback, null);
      try {
        // A line far longer than a frame, a multi-byte character astride its first cut, tabs,
        // backslashes, percent signs, an empty line, and a last line without newline.
        const data = `${"x".repeat(3839)}\u00e9${"y".repeat(5000)}\ntab\there \\n %s %% -e \n\nlast`;
        const [a, b] = await Promise.all([
          s.exec({ shell: "cat; echo err >&2; exit 3" }, { record: true, stdin: data }),
          s.exec({ argv: ["sh", "-c", 'for i in 1 2 3; do echo "b$i"; sleep 0.1; done'] }),
        ]);
        assert.deepEqual([a.exitCode, a.endRecord?.exitCode, b.exitCode], [3, 3, 0]);
        assert.ok(a.stdout === data, `stdout round-trips (${a.stdout.length} of ${data.length})`);
        assert.equal(b.stdout, "b1\nb2\nb3\n");
        assert.equal(a.stderr, "err\n");
        assert.ok(a.pgid && b.pgid && a.pgid !== b.pgid, "each command leads its own group");
        // ... and its own session: its processes' group and session are the pid it reported.
        const c = await s.exec({ shell: "read -r _ _ _ _ g i _ < /proc/$$/stat; echo $g $i" });
        assert.equal(c.stdout, `${c.pgid} ${c.pgid}\n`);
        // The supervisor's one login counts for its first command only.
        assert.deepEqual([a.loginMs, b.loginMs].map((x) => typeof x === "number" && x > 0).sort(), [
          false,
          true,
        ]);
      } finally {
        await s.close();
      }
    });

    it("kills a command at its deadline through the supervisor, with evidence", async () => {
      const run = newRunId();
      const t = new Node(here, run);
      const s = await t.supervise();
      try {
        const r = await s.exec({ shell: "sleep 100 & sleep 100; wait" }, { timeoutMs: 1000 });
        assert.deepEqual([r.timedOut, r.aliveAtKill, r.exitCode], [true, true, 143]);
        assert.deepEqual(taggedPids(`SLICECHECK_CMD=${run}`), []);
        // It still runs the next command afterwards.
        assert.equal((await s.exec({ shell: "echo ok" })).stdout, "ok\n");
      } finally {
        await s.close();
      }
      // Closed at the end of the phase: nothing of the run is left on the node.
      const tag = `SLICECHECK_RUN=${runTagFor(run, here.name)}`;
      assert.ok(
        await waitFor(() => taggedPids(tag).length === 0, 10_000),
        `left ${taggedPids(tag)}`,
      );
    });

    for (const [how, heartbeatS, stop] of [
      ["its stdin ends (controller killed)", 15, (p: RawProcess) => p.end()],
      ["the heartbeats stop", 2, () => {}],
    ] as const) {
      it(`kills every command it started with SIGHUP when ${how}`, async () => {
        const t = new Node(here, newRunId());
        const sup = await rawSupervisor(t, heartbeatS);
        const tags = [`${t.runId}.a1`, `${t.runId}.b2`];
        sup.send(`s ${tags[0]} ${escapeLine(workload(t, tags[0]!, "sleep 100"))}`);
        // The second as perl starts a recorded workload itself, where it offers to (`r`).
        sup.send(directRequest(t, tags[1]!, "sleep 100", sup.direct));
        const started = () => tags.every((tag) => sup.text(tag, "stderr").includes(PGID_MARKER));
        assert.ok(await waitFor(started, 10_000), "both started");
        stop(sup.p);
        assert.ok(
          await waitFor(() => tags.every((tag) => sup.exit(tag) !== undefined), 30_000),
          "both ended",
        );
        // 129: SIGHUP, the watchdog's signal, as the node recorded it.
        assert.deepEqual(
          tags.map((tag) => [sup.exit(tag), /rc=(\d+)/.exec(sup.text(tag, "stderr"))?.[1]]),
          [
            [129, "129"],
            [129, "129"],
          ],
        );
        for (const tag of tags) assert.deepEqual(taggedPids(`SLICECHECK_CMD=${tag}`), []);
        sup.p.end();
        await sup.p.done;
      });
    }

    it("runs its watchdog under the kill prefix (sudo -n) where commands may run as root", async () => {
      // A sudo of this test's own, first on PATH: it notes its arguments and runs the rest.
      const fake = tempDir("fake-sudo");
      const sudo = `#!/bin/sh\necho "$*" >> ${fake}/calls\n[ "$1" = -n ] && shift\nexec "$@"\n`;
      writeFileSync(join(fake, "sudo"), sudo, { mode: 0o755 });
      writeFileSync(join(fake, "calls"), "");
      const t = new (nodeWith({ PATH: `${fake}:${path}` }))(here, newRunId());
      const sup = await rawSupervisor(t, 15, true);
      const tag = `${t.runId}.u1`;
      sup.send(`s ${tag} ${escapeLine(workload(t, tag, "sleep 100"))}`);
      assert.ok(await waitFor(() => sup.text(tag, "stderr").includes(PGID_MARKER), 10_000));
      sup.p.end();
      assert.ok(await waitFor(() => sup.exit(tag) !== undefined, 30_000), "it ended");
      assert.equal(sup.exit(tag), 129);
      const calls = readFileSync(join(fake, "calls"), "utf8").split("\n").filter(Boolean);
      assert.equal(calls.length, 1, calls.join("\n"));
      assert.ok(calls[0]!.startsWith("-n sh -c "), calls[0]);
      assert.ok(calls[0]!.endsWith(` watchdog ${tag} ${calls[0]!.split(" ").at(-1)}`), calls[0]);
      assert.match(calls[0]!.split(" ").at(-1)!, /^\d+$/);
      await sup.p.done;
    });

    it("reads a request whose line comes in pieces, and an empty line, whole", async () => {
      // bash awaits a line's first byte under the heartbeat timeout and reads the rest without
      // one: the rest must still be waited for, not cut at what has come so far.
      const t = new Node(here, newRunId());
      const sup = await rawSupervisor(t);
      const tag = `${t.runId}.p1`;
      const line = `s ${tag} ${escapeLine(workload(t, tag, "echo in pieces"))}`;
      sup.p.write(line.slice(0, 1));
      await new Promise((r) => setTimeout(r, 300));
      sup.p.write(line.slice(1, 40));
      await new Promise((r) => setTimeout(r, 300));
      sup.p.write(`${line.slice(40)}\n\n`);
      assert.ok(await waitFor(() => sup.exit(tag) !== undefined, 10_000));
      assert.equal(sup.text(tag, "stdout"), "in pieces\n");
      assert.equal(sup.exit(tag), 0);
      sup.p.end();
      await sup.p.done;
    });

    it("reports a request it cannot read and goes on", async () => {
      const t = new Node(here, newRunId());
      const sup = await rawSupervisor(t);
      sup.send("what is this");
      const tag = `${t.runId}.c3`;
      sup.send(`s ${tag} ${escapeLine(workload(t, tag, "echo still here"))}`);
      assert.ok(await waitFor(() => sup.exit(tag) !== undefined, 10_000));
      assert.equal(sup.text(tag, "stdout"), "still here\n");
      sup.p.end();
      await sup.p.done;
    });
  });

describe("node supervisor: which one, and when none", function () {
  this.timeout(60_000);

  it("the shell's is refused by a node without setsid: each command then takes its own channel", async () => {
    const t = new (nodeWith({ PATH: pathWithout(["perl", "setsid"]) }))(here, newRunId());
    const s = await t.supervise();
    try {
      assert.equal(s.fallback, "setsid is missing on the node");
      const r = await s.exec({ shell: "echo alone; command -v setsid || echo none" });
      assert.deepEqual([r.exitCode, r.stdout], [0, "alone\nnone\n"]);
    } finally {
      await s.close();
    }
    // The launcher says so in each workload's log, never silently.
    const inst: Instance = {
      node: here.name,
      gpu: 0,
      gpuUuid: "GPU-0",
      gpuName: "none",
      uuid: "GPU-0",
      profile: "whole-gpu",
      gpuInstanceId: null,
      computeInstanceId: null,
      placement: null,
      sm: null,
      memoryMiB: null,
    };
    const outDir = tempDir("no-setsid-out");
    const spec = { name: "stress", program: "echo", args: ["ran"], durationS: 1 } as const;
    const [o] = await runOnInstances([t], [inst], { ...spec, args: [...spec.args] }, { outDir });
    assert.equal(o!.exitCode, 0);
    assert.equal(
      readFileSync(o!.log, "utf8"),
      "slicecheck: one login for this workload alone: setsid is missing on the node\nran\n",
    );
  });

  it("perl's needs no setsid, and is refused by a node without timeout", async () => {
    const noSetsid = new (nodeWith({ PATH: pathWithout(["setsid"]) }))(here, newRunId());
    const a = await rawSupervisor(noSetsid);
    assert.match(a.program, /^perl/);
    a.p.end();
    await a.p.done;
    const t = new (nodeWith({ PATH: pathWithout(["timeout"]) }))(here, newRunId());
    const s = await t.supervise();
    await s.close();
    assert.equal(s.fallback, "timeout is missing on the node");
  });

  it("perl without its POSIX module hands over to the shell's", async () => {
    // A POSIX.pm first on perl's @INC that fails to load, as where perl-POSIX is not installed.
    const lib = tempDir("no-posix");
    writeFileSync(join(lib, "POSIX.pm"), 'die "no POSIX here\\n";\n');
    const t = new (nodeWith({ PERL5LIB: lib }))(here, newRunId());
    const sup = await rawSupervisor(t);
    assert.match(sup.program, /^(bash|dash)$/);
    const tag = `${t.runId}.n1`;
    sup.send(`s ${tag} ${escapeLine(workload(t, tag, "echo handed over"))}`);
    assert.ok(await waitFor(() => sup.exit(tag) !== undefined, 10_000));
    assert.deepEqual([sup.exit(tag), sup.text(tag, "stdout")], [0, "handed over\n"]);
    sup.p.end();
    await sup.p.done;
  });
});
