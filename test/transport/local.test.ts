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

  it("kills the whole tree at the deadline, and its watchdog reaps strays at close", async () => {
    const run = newRunId();
    const t = new LocalTransport(here, run);
    const tag = `SLICECHECK_RUN=${runTagFor(run, here.name)}`;
    try {
      const r = await t.exec({ shell: "sleep 100 & sleep 100; wait" }, { timeoutMs: 1000 });
      assert.equal(r.timedOut, true);
      assert.deepEqual(taggedPids(tag), []);
      // A detached stray (setsid escapes the process group) is left for the watchdog.
      await t.exec({ shell: "setsid sleep 100 >/dev/null 2>&1 < /dev/null &" });
      assert.equal(taggedPids(tag).length, 1);
    } finally {
      await t.close();
    }
    assert.ok(
      await waitFor(() => taggedPids(tag).length === 0, 10_000),
      "the watchdog killed the stray at close",
    );
  });
});
