import assert from "node:assert/strict";
import { inPool } from "../src/pool.js";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("sim's bounded pool (inPool)", () => {
  it("runs every item, never more than the limit at once, results in the items' order", async () => {
    let running = 0;
    let peak = 0;
    const out = await inPool([5, 1, 4, 2, 3, 0, 6], 3, async (n, i) => {
      running++;
      peak = Math.max(peak, running);
      for (let k = 0; k < n; k++) await tick();
      running--;
      return `${i}:${n}`;
    });
    assert.deepEqual(out, ["0:5", "1:1", "2:4", "3:2", "4:3", "5:0", "6:6"]);
    assert.equal(peak, 3, "three ran at once, not more and not fewer");
  });

  it("starts nothing after a failure, waits for those running, then throws the first error", async () => {
    const started: number[] = [];
    let finished = 0;
    await assert.rejects(
      inPool([0, 1, 2, 3, 4, 5], 2, async (n) => {
        started.push(n);
        if (n === 1) throw new Error("node 1 failed");
        for (let k = 0; k < 3; k++) await tick();
        finished++;
      }),
      /node 1 failed/,
    );
    assert.deepEqual(started, [0, 1], "nothing started after the failure");
    assert.equal(finished, 1, "item 0, running when 1 failed, was waited for");
  });

  it("handles no items and a limit above the count", async () => {
    assert.deepEqual(await inPool([], 4, async () => 1), []);
    assert.deepEqual(await inPool([1, 2], 10, async (n) => n * 2), [2, 4]);
  });
});
