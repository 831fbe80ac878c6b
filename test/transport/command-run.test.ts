// A gated command's deadline counts from its gate's opening, not from its start: the gate's
// allowed wait is only there for the gate (issue 25). Driven by hand, as a carrier drives it.
import assert from "node:assert/strict";
import { CommandRun, GROUP_KILL_GRACE_MS } from "../../src/transport/command-run.js";
import { GATE_MARKER, PGID_MARKER } from "../../src/transport/remote-scripts.js";

const node = { name: "n1", host: "127.0.0.1", port: 22, user: "root" } as never;

function runWith(o: { timeoutMs: number; waitS: number }) {
  let killed: (at: number) => void = () => {};
  const kill = new Promise<number>((r) => {
    killed = r;
  });
  const run = new CommandRun(
    {
      node,
      runId: "r1",
      runTag: "t1",
      kill: async () => {
        killed(Date.now());
        return "alive=1";
      },
      lost: () => null,
    },
    { argv: ["true"] },
    { timeoutMs: o.timeoutMs, record: true, gate: { key: "k1", count: 2, waitS: o.waitS } },
  );
  return { run, kill };
}

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<"late">((r) => setTimeout(() => r("late"), ms).unref())]);

describe("command-run: a gated command's deadline (unit)", () => {
  it("re-arms the deadline at the gate's line, less the gate's wait, and keeps the line out of stderr", async () => {
    // 60 s in all, 59 of them for the gate: once the gate opened, 1 s is left.
    const { run, kill } = runWith({ timeoutMs: 60_000, waitS: 59 });
    run.begin();
    run.onStderr(Buffer.from(`${PGID_MARKER}4242\n`));
    // The gate's line split across chunks, the command's own first line behind it.
    run.onStderr(Buffer.from(GATE_MARKER.slice(0, 9)));
    run.onStderr(Buffer.from(`${GATE_MARKER.slice(9)}\nwarming up\n`));
    const at = await within(kill, 20_000);
    assert.notEqual(at, "late", "killed at the deadline counted from the gate's opening");
    const r = await run.finish({ code: 124, signal: null });
    run.dispose();
    assert.equal(r.timedOut, true);
    assert.equal(r.stderr, "warming up\n");
    assert.equal(r.pgid, 4242);
  });

  it("a gated command whose first line is not the gate's keeps the whole deadline and its line", async () => {
    const { run, kill } = runWith({ timeoutMs: 60_000, waitS: 59 });
    run.begin();
    run.onStderr(
      Buffer.from(`${PGID_MARKER}4242\nsh: 1: cannot create /tmp/x: Permission denied\n`),
    );
    // Planted: had the deadline been re-armed, the kill would come within about 1 s.
    assert.equal(await within(kill, 2_000), "late");
    const r = await run.finish({ code: 2, signal: null });
    run.dispose();
    assert.equal(r.timedOut, false);
    assert.match(r.stderr, /Permission denied/);
  });
});

describe("command-run: the kill of a command that stays in its process group (unit)", () => {
  /** A run whose kills are recorded (their scripts, in order) instead of sent. */
  function recorded(opts: { staysInGroup?: boolean }) {
    const scripts: string[] = [];
    const ac = new AbortController();
    const run = new CommandRun(
      {
        node,
        runId: "r1",
        runTag: "t1",
        kill: async (_tag, script) => {
          scripts.push(script);
          return "alive=1\nkilled=1";
        },
        lost: () => null,
      },
      { argv: ["sleep", "60"] },
      { timeoutMs: 60_000, signal: ac.signal, ...opts },
    );
    run.begin();
    return { run, ac, scripts };
  }
  const byGroup = /kill -TERM -4242 /;
  const byTag = /SLICECHECK_CMD=r1\./;

  it("signals its group alone, and ends without a scan of the node when it ends", async () => {
    const { run, ac, scripts } = recorded({ staysInGroup: true });
    run.onStderr(Buffer.from(`${PGID_MARKER}4242\n`));
    ac.abort("test");
    await run.finish({ code: 143, signal: null }).catch(() => {});
    run.dispose();
    await new Promise((r) => setTimeout(r, GROUP_KILL_GRACE_MS + 300));
    assert.equal(scripts.length, 1, scripts.join("\n---\n"));
    assert.match(scripts[0] ?? "", byGroup);
    assert.doesNotMatch(scripts[0] ?? "", byTag);
  });

  it("is killed by its tag too when it outlives the group kill", async () => {
    const { run, ac, scripts } = recorded({ staysInGroup: true });
    run.onStderr(Buffer.from(`${PGID_MARKER}4242\n`));
    ac.abort("test");
    await new Promise((r) => setTimeout(r, GROUP_KILL_GRACE_MS + 300));
    run.dispose();
    assert.equal(scripts.length, 2, scripts.join("\n---\n"));
    assert.match(scripts[0] ?? "", byGroup);
    assert.match(scripts[1] ?? "", byTag);
  });

  it("is killed by its tag when its group is not known, or it may leave it", async () => {
    for (const [opts, marker] of [
      [{ staysInGroup: true }, ""],
      [{}, `${PGID_MARKER}4242\n`],
    ] as const) {
      const { run, ac, scripts } = recorded(opts);
      if (marker) run.onStderr(Buffer.from(marker));
      ac.abort("test");
      await run.finish({ code: 143, signal: null }).catch(() => {});
      run.dispose();
      assert.equal(scripts.length, 1);
      assert.match(scripts[0] ?? "", byTag);
    }
  });
});
