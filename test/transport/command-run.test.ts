// A gated command's deadline counts from its gate's opening, not from its start: the gate's
// allowed wait is only there for the gate (issue 25). Driven by hand, as a carrier drives it.
import assert from "node:assert/strict";
import { CommandRun } from "../../src/transport/command-run.js";
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
