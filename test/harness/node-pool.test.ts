// Work per node: every node queued at once, at most the limit running, one node's failure its
// own; an isolation plan started through its slot however it is first asked for.
import assert from "node:assert/strict";
import pLimit from "p-limit";
import { gatedPlan, type NodeIsolation, nodeWork } from "../../src/harness/node-pool.js";

const nodes = ["n1", "n2", "n3", "n4"].map((name) => ({ name }));

/** fn per node that counts how many run at once and ends when released. */
function tracked() {
  let running = 0;
  let most = 0;
  const release = new Map<string, () => void>();
  const fn = (n: { name: string }) =>
    new Promise<string>((resolve, reject) => {
      running++;
      most = Math.max(most, running);
      release.set(n.name, () => {
        running--;
        if (n.name === "n2") reject(new Error("n2 lost"));
        else resolve(`${n.name} ok`);
      });
    });
  return { fn, release, most: () => most };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("node pool (nodes side by side, bounded)", () => {
  it("starts every node at once under a large limit; a failed node rejects alone", async () => {
    const t = tracked();
    const w = nodeWork(pLimit(64), nodes, t.fn);
    w.start();
    await tick();
    assert.equal(t.most(), 4, "all four running together");
    for (const r of t.release.values()) r();
    assert.equal(await w.result({ name: "n1" }), "n1 ok");
    await assert.rejects(w.result({ name: "n2" }), /n2 lost/);
    assert.equal(await w.result({ name: "n4" }), "n4 ok");
  });

  it("runs at most the limit at once, the next node when a slot frees", async () => {
    const t = tracked();
    const w = nodeWork(pLimit(2), nodes, t.fn);
    w.start();
    await tick();
    assert.deepEqual([...t.release.keys()], ["n1", "n2"], "the first two, in order");
    t.release.get("n2")!();
    await tick();
    assert.deepEqual([...t.release.keys()], ["n1", "n2", "n3"]);
    t.release.get("n1")!();
    t.release.get("n3")!();
    await tick();
    t.release.get("n4")!();
    assert.equal(await w.result({ name: "n4" }), "n4 ok");
    assert.equal(t.most(), 2);
  });

  it("a node not in the work is refused, not waited for", async () => {
    const w = nodeWork(pLimit(1), nodes, async (n) => n.name);
    await assert.rejects(w.result({ name: "n9" }), /n9 is not one of this work's nodes/);
  });

  it("gatedPlan: a result or a route asked first starts the node once, through its slot", async () => {
    let starts = 0;
    let gated = 0;
    const plan: NodeIsolation = {
      start: async () => {
        starts++;
      },
      scenarios: [
        {
          gpu: 0,
          mode: "mig",
          route: "MIG",
          aggressor: { label: "a", profile: "3g", placement: "0:4", title: "3g" },
          fault: "kill",
          verdictNames: ["faultContained"],
          result: async () => ({ verdicts: [], startMs: 0, stopMs: 0, steps: [] }),
        },
      ],
      problem: null,
      route: async () => null,
    };
    const g = gatedPlan(plan, (go) => {
      gated++;
      return go();
    });
    await g.scenarios[0]!.result();
    await g.route(0);
    g.start();
    assert.equal(gated, 1, "one slot taken");
    assert.equal(starts, 1, "the scenarios ran once");
  });
});
