import assert from "node:assert/strict";
import { LocalTransport } from "../../src/transport/local.js";
import { runTagFor } from "../../src/transport/managed.js";
import { newRunId, openTransport } from "../../src/transport/open.js";
import { taggedPids, waitFor } from "../helpers/cluster.js";
import { nodeSpec } from "../helpers/node.js";

const here = nodeSpec("gpu-local", { host: "localhost", user: "ignored" });

describe("local transport (host: localhost)", function () {
  this.timeout(30_000);

  it("is chosen for host: localhost and runs commands with the same wrapper", async () => {
    const t = openTransport(here, { runId: newRunId() });
    assert.ok(t instanceof LocalTransport);
    try {
      const r = await t.exec({ shell: 'echo "$SLICECHECK_RUN"; echo e >&2; exit 4' });
      assert.deepEqual(
        [r.exitCode, r.stdout, r.stderr],
        [4, `${runTagFor(t.runId, here.name)}\n`, "e\n"],
      );
      assert.ok(r.pgid, "the command ran in its own process group");
    } finally {
      await t.close();
    }
  });

  it("kills the whole tree at the deadline, and its watchdog reaps strays when their command ends", async () => {
    const run = newRunId();
    const t = new LocalTransport(here, run);
    const tag = `SLICECHECK_RUN=${runTagFor(run, here.name)}`;
    try {
      const r = await t.exec({ shell: "sleep 100 & sleep 100; wait" }, { timeoutMs: 1000 });
      assert.equal(r.timedOut, true);
      assert.deepEqual(taggedPids(tag), []);
      // A detached stray (setsid escapes the process group) carries the command's tag: the
      // command's watchdog kills it once the command's channel ends, with no second channel.
      const s = await t.exec({ shell: "setsid sleep 100 >/dev/null 2>&1 < /dev/null & echo $!" });
      const stray = Number(s.stdout.trim());
      assert.ok(stray > 0, s.stdout);
      assert.ok(
        await waitFor(() => taggedPids(tag).length === 0, 10_000),
        `the watchdog killed the stray ${stray}: left ${taggedPids(tag)}`,
      );
    } finally {
      await t.close();
    }
  });
});
