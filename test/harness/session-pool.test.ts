// The node session's channel budget (local transport: the pool logic, not SSH): a channel an
// observer holds is waited for, never paid for with a second login; the run's own commands
// beyond the budget still get a second connection.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { NodeSession } from "../../src/harness/session.js";
import { runTagFor } from "../../src/transport/managed.js";
import { MAX_CHANNELS } from "../../src/transport/ssh.js";
import { nodeSpec } from "../helpers/node.js";
import { taggedPids, waitFor } from "../helpers/procs.js";

const node = nodeSpec("pool01", { host: "localhost", transport: "local" });

const sleep = (s: number) => ({ argv: ["sleep", String(s)] });

describe("node session: the channel budget", function () {
  this.timeout(30_000);

  it("a command that finds the last channel held by an observer waits for it on the same connection", async () => {
    const s = new NodeSession(node, "sc-test-pool");
    await s.open({ lock: false, command: "test" });
    const work = Array.from({ length: MAX_CHANNELS - 1 }, () => s.exec(sleep(1.5)));
    const observer = s.execIfFree(sleep(0.5));
    // The budget is full (7 of the run's, 1 observer's): the next command waits for the observer.
    const late = s.exec({ argv: ["true"] });
    const seen = await observer;
    assert.notEqual(seen, null, "the observer had a free channel");
    await Promise.all([...work, late]);
    assert.equal(s.connectionsOpened, 1);
    await s.close();
  });

  it("an observer is declined while a command of the run waits for a channel", async () => {
    const s = new NodeSession(node, "sc-test-pool2");
    await s.open({ lock: false, command: "test" });
    const work = Array.from({ length: MAX_CHANNELS - 1 }, () => s.exec(sleep(1)));
    const observer = s.execIfFree(sleep(0.5));
    const late = s.exec(sleep(0.2));
    assert.equal(await s.execIfFree({ argv: ["true"] }), null);
    await Promise.all([...work, observer, late]);
    assert.equal(s.connectionsOpened, 1);
    await s.close();
  });

  it("the run's own commands beyond the budget open a second connection", async () => {
    const s = new NodeSession(node, "sc-test-pool3");
    await s.open({ lock: false, command: "test" });
    await Promise.all(Array.from({ length: MAX_CHANNELS + 1 }, () => s.exec(sleep(0.3))));
    assert.equal(s.connectionsOpened, 2);
    await s.close();
  });
});

describe("node session: a supervisor prepared ahead of the first phase", function () {
  this.timeout(30_000);
  /** The node's supervisor shells of `runId` (their command line names them). */
  const supervisors = (runId: string) =>
    taggedPids(`SLICECHECK_RUN=${runTagFor(runId, node.name)}`).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "latin1").includes("slicecheck-supervisor");
      } catch {
        return false;
      }
    });

  it("is the one the first phase takes; the next phase starts its own", async () => {
    const s = new NodeSession(node, "sc-test-warm1");
    await s.open({ lock: false, command: "test" });
    s.prepareSupervisor();
    assert.ok(await waitFor(() => supervisors("sc-test-warm1").length === 1, 10_000));
    const [before] = supervisors("sc-test-warm1");
    const first = await s.supervise();
    assert.deepEqual(supervisors("sc-test-warm1"), [before], "a second supervisor was started");
    assert.equal((await first.exec({ argv: ["echo", "hi"] })).stdout, "hi\n");
    await first.close();
    const second = await s.supervise();
    assert.equal(supervisors("sc-test-warm1").filter((p) => p !== before).length, 1);
    await second.close();
    await s.close();
  });

  it("one never taken ends with the session", async () => {
    const s = new NodeSession(node, "sc-test-warm2");
    await s.open({ lock: false, command: "test" });
    s.prepareSupervisor();
    assert.ok(await waitFor(() => supervisors("sc-test-warm2").length === 1, 10_000));
    await s.close();
    assert.ok(
      await waitFor(() => supervisors("sc-test-warm2").length === 0, 5_000),
      "the prepared supervisor outlived its session",
    );
  });
});
