// The node session's channel budget (local transport: the pool logic, not SSH): a channel an
// observer holds is waited for, never paid for with a second login; the run's own commands
// beyond the budget still get a second connection.
import assert from "node:assert/strict";
import { NodeSession } from "../../src/harness/session.js";
import { MAX_CHANNELS } from "../../src/transport/ssh.js";
import { nodeSpec } from "../helpers/node.js";

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
