// A recorded workload that perl's supervisor starts itself (`r`, direct-start.ts) against the
// same workload through wrapCommand's line (`s`: sh, timeout, the recorder's bash), which is
// what a perl without Time::HiRes is sent. Run through a local `sh` (LocalTransport runs command
// lines as sshd would). What the controller gets must be the same: exit codes, output, the end
// record, the tags, the pgid; the node's own deadline must keep timeout's 124 and 137; and the
// end record must be the last of stderr. (supervisor.test.ts: the watchdog ends `r` commands.)
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { directStart } from "../../src/transport/direct-start.js";
import { LocalTransport } from "../../src/transport/local.js";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId } from "../../src/transport/open.js";
import {
  END_MARKER,
  PGID_MARKER,
  type WrapOptions,
  wrapCommand,
} from "../../src/transport/remote-scripts.js";
import { escapeLine } from "../../src/transport/supervisor-script.js";
import type { Command, ExecResult } from "../../src/transport/types.js";
import { nodeSpec } from "../helpers/node.js";
import { taggedPids, waitFor } from "../helpers/procs.js";
import { rawSupervisor as rawSup } from "../helpers/raw-supervisor.js";
import { tempDir } from "../helpers/tmp.js";

const here = nodeSpec("gpu-local", { host: "localhost", user: "ignored" });

/** A local node whose perl finds a Time::HiRes that fails to load first on its @INC, as where
 * the module is not installed: its supervisor then takes no `r` request. */
function nodeWithoutHiRes(): LocalTransport {
  const lib = tempDir("no-hires");
  mkdirSync(join(lib, "Time"));
  writeFileSync(join(lib, "Time", "HiRes.pm"), 'die "no Time::HiRes here\\n";\n');
  const Node = class extends LocalTransport {
    override start(line: string) {
      return super.start(`PERL5LIB=${lib}; export PERL5LIB; ${line}`);
    }
  };
  return new Node(here, newRunId());
}

const WAYS = [
  { name: "direct", node: () => new LocalTransport(here, newRunId()), parent: "perl" },
  { name: "wrapped", node: nodeWithoutHiRes, parent: "bash" },
] as const;

/** `cmd`, recorded, through each way's supervisor: [direct, wrapped]. */
async function both(cmd: Command, opts: { env?: Record<string, string>; timeoutMs?: number } = {}) {
  const out: ExecResult[] = [];
  for (const way of WAYS) {
    const s = await way.node().supervise();
    try {
      assert.equal(s.fallback, null);
      out.push(await s.exec(cmd, { record: true, ...opts }));
    } finally {
      await s.close();
    }
  }
  return out as [ExecResult, ExecResult];
}

/** The supervisor spoken to in its own protocol (helpers/raw-supervisor.ts), on this node. */
const rawSupervisor = (t: LocalTransport, heartbeatS = 15) => rawSup(t, here, heartbeatS);

/** The options wrapCommand and directStart get from a supervised, recorded command. */
function wrapOpts(t: LocalTransport, cmdTag: string, deadlineS: number): WrapOptions {
  const runTag = runTagFor(t.runId, here.name);
  return { runTag, cmdTag, deadlineS, sudo: false, record: true, noWatcher: true };
}

/** The request each way sends for `shell` under a node deadline of `deadlineS`. */
function request(direct: boolean, o: WrapOptions, shell: string): string {
  const cmd = { shell };
  const r = directStart(cmd, o);
  assert.ok(r !== null, "a recorded command can be started directly");
  return direct
    ? `r ${o.cmdTag} ${escapeLine(r)}`
    : `s ${o.cmdTag} ${escapeLine(wrapCommand(cmd, o))}`;
}

describe("a recorded workload that perl's supervisor starts itself, against wrapCommand's line", function () {
  this.timeout(60_000);

  it("is offered only by a perl with Time::HiRes, and then skips sh, timeout and the recorder", async () => {
    const offered: boolean[] = [];
    for (const way of WAYS) {
      const sup = await rawSupervisor(way.node());
      offered.push(sup.direct);
      sup.p.end();
      await sup.p.done;
    }
    assert.deepEqual(offered, [true, false]);
    const [d, w] = await both({ shell: "cat /proc/$PPID/comm" });
    assert.deepEqual([d.stdout, w.stdout], ["perl\n", "bash\n"]);
  });

  it("gives the same exit code, output and end record, with the stderr's last line unfinished", async () => {
    const [d, w] = await both({
      argv: ["sh", "-c", "echo out; echo err >&2; printf partial >&2; exit 7"],
    });
    for (const r of [d, w]) {
      assert.deepEqual([r.exitCode, r.endRecord?.exitCode], [7, 7]);
      assert.deepEqual([r.stdout, r.stderr], ["out\n", "err\npartial"]);
      assert.ok(r.endRecord && r.endRecord.endS >= r.endRecord.startS, "an end after its start");
      assert.ok(Math.abs(r.endRecord.startS - Date.now() / 1000) < 30, "the node's clock");
      assert.ok(r.endRecord.cpuWaitMs !== undefined, "the CPU stall, from PSI");
    }
  });

  it("records a death by signal as 128 + the signal, as the shell reports it", async () => {
    const [d, w] = await both({ shell: "kill -TERM $$" });
    assert.deepEqual(
      [d, w].map((r) => [r.exitCode, r.endRecord?.exitCode]),
      [
        [143, 143],
        [143, 143],
      ],
    );
  });

  it("hands the command the same tags and environment, and its own session", async () => {
    const shell =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell expansions, on the node
      'echo "$SLICECHECK_RUN|${SLICECHECK_CMD%%.*}|${SLICECHECK_JOB-unset}|$EXTRA"; read -r _ _ _ _ g i _ < /proc/$$/stat; echo "$g $i"';
    const [d, w] = await both({ shell }, { env: { EXTRA: "a  b" } });
    for (const r of [d, w]) {
      const [tags, ids] = r.stdout.split("\n");
      assert.match(tags!, /^sc-[^|]+\|sc-[^|]+\|\|a {2}b$/);
      assert.equal(ids, `${r.pgid} ${r.pgid}`);
    }
    // The run's tag is its id at the node; the command's tag starts with the run's id.
    assert.equal(d.stdout.split("|")[0], `${d.stdout.split("|")[1]}@${here.name}`);
  });

  it("says a program that is not there exits 127, as the recorder's shell does", async () => {
    const [d, w] = await both({ argv: ["/nonexistent/slicecheck-prog"] });
    for (const r of [d, w]) {
      assert.deepEqual([r.exitCode, r.endRecord?.exitCode], [127, 127]);
      assert.match(r.stderr, /\/nonexistent\/slicecheck-prog/);
    }
  });

  it("is killed through the supervisor at the controller's deadline, with evidence", async () => {
    const [d, w] = await both({ shell: "sleep 100 & sleep 100; wait" }, { timeoutMs: 1000 });
    for (const r of [d, w]) {
      assert.deepEqual([r.timedOut, r.aliveAtKill, r.exitCode], [true, true, 143]);
      assert.equal(r.endRecord?.exitCode, 143);
    }
  });

  it("keeps the node's own deadline as timeout does: TERM and 124, KILL and 137 without a record", async function () {
    this.timeout(90_000);
    const got: unknown[] = [];
    for (const way of WAYS) {
      const t = way.node();
      const sup = await rawSupervisor(t);
      const a = wrapOpts(t, `${t.runId}.t1`, 1);
      const b = wrapOpts(t, `${t.runId}.t2`, 1);
      // TERM ignored by the shell and, inherited, by its sleep: only the KILL ends them.
      sup.send(request(way.name === "direct", a, "sleep 100"));
      sup.send(request(way.name === "direct", b, "trap '' TERM; sleep 100"));
      const ended = () => sup.exit(a.cmdTag) !== undefined && sup.exit(b.cmdTag) !== undefined;
      assert.ok(await waitFor(ended, 30_000), "both ended");
      const rc = (id: string) => new RegExp(`${END_MARKER}rc=(\\d+)`).exec(sup.text(id, "stderr"));
      got.push([sup.exit(a.cmdTag), rc(a.cmdTag)?.[1], sup.exit(b.cmdTag), rc(b.cmdTag)]);
      for (const o of [a, b]) assert.deepEqual(taggedPids(`SLICECHECK_CMD=${o.cmdTag}`), []);
      sup.p.end();
      await sup.p.done;
    }
    assert.deepEqual(got, [
      [124, "143", 137, null],
      [124, "143", 137, null],
    ]);
  });

  it("puts the end record after everything the command wrote on stderr, even output it had not read yet", async () => {
    // A controller that stops reading for 4 s after the ready frame: a flood on another
    // command's stdout then fills the supervisor's queue past 1 MiB, and it reads no output
    // until the queue drains. The command ends meanwhile, its line still in its pipe: the
    // supervisor must read that pipe before it writes the end record.
    const Stalled = class extends LocalTransport {
      override start(line: string) {
        return super.start(`{ ${line}\n} | { IFS= read -r l; printf '%s\\n' "$l"; sleep 4; cat; }`);
      }
    };
    const t = new Stalled(here, newRunId());
    const sup = await rawSupervisor(t);
    const flood = wrapOpts(t, `${t.runId}.f1`, 60);
    const o = wrapOpts(t, `${t.runId}.o1`, 60);
    sup.send(request(true, flood, "head -c 3000000 /dev/zero | tr '\\0' x"));
    sup.send(request(true, o, "echo first >&2; sleep 1; echo last >&2"));
    assert.ok(await waitFor(() => sup.exit(o.cmdTag) !== undefined, 30_000));
    const lines = sup.text(o.cmdTag, "stderr").split("\n");
    assert.ok(lines[0]!.startsWith(PGID_MARKER), lines[0]);
    assert.deepEqual(lines.slice(1, 3), ["first", "last"]);
    assert.ok(lines[3]!.startsWith(END_MARKER), lines[3]);
    assert.deepEqual(lines.slice(4), [""]);
    assert.ok(await waitFor(() => sup.exit(flood.cmdTag) !== undefined, 30_000));
    assert.equal(sup.text(flood.cmdTag, "stdout").length, 3_000_000);
    sup.p.end();
    await sup.p.done;
  });

  it("is not used for what needs more than it gives: sudo, data for stdin, a start gate", () => {
    const o: WrapOptions = {
      runTag: "r",
      cmdTag: "c",
      deadlineS: 9,
      sudo: false,
      record: true,
      noWatcher: true,
    };
    assert.notEqual(directStart({ shell: "true" }, o), null);
    assert.equal(directStart({ shell: "true" }, { ...o, sudo: true }), null);
    assert.equal(directStart({ shell: "true" }, { ...o, stdin: "" }), null);
    assert.equal(
      directStart({ shell: "true" }, { ...o, gate: { key: "k", count: 2, waitS: 1 } }),
      null,
    );
    assert.equal(directStart({ shell: "true" }, { ...o, record: false }), null);
    assert.equal(directStart({ shell: "true" }, { ...o, noWatcher: false }), null);
    assert.equal(directStart({ argv: ["a\0b"] }, o), null);
  });
});
