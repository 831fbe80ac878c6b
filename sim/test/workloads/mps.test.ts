// MPS on the simulated node: a fatal fault in one client takes the other clients of the GPU with
// it; without MPS (plain time-slicing, separate contexts) the same fault stays in its process.
import assert from "node:assert/strict";
import { parseBuiltinOutput } from "../../../src/workloads/parsers/builtin.js";
import { parseCudaErrors } from "../../../src/workloads/parsers/cuda-errors.js";
import { cleanup, node, run, start, state } from "./helpers.js";

describe("simulated workloads: MPS fault propagation", function () {
  this.timeout(30_000);
  afterEach(cleanup);

  async function faultAmongClients(mps: boolean) {
    const dir = await node("A100-80GB", 1);
    if (mps) assert.equal((await run(dir, "mps-control", ["-d"])).code, 0);
    const stress = ["--duration", "2.5", "--interval", "0.25"];
    const clients = [start(dir, "stress", stress), start(dir, "stress", stress)];
    const crash = await run(dir, "crasher", ["--mode", "illegal-address", "--after", "0.8"]);
    assert.equal(crash.code, 2);
    assert.equal(parseCudaErrors(crash.err)[0]?.kind, "illegal-address");
    const ends = await Promise.all(clients.map((c) => c.done));
    return { dir, clients, ends };
  }

  it("with MPS, every other client dies of the same error (and the daemon can quit)", async () => {
    const { dir, clients, ends } = await faultAmongClients(true);
    for (const [k, c] of clients.entries()) {
      assert.equal(ends[k]!.code, 2, c.err);
      assert.equal(parseCudaErrors(c.err)[0]?.kind, "illegal-address", c.err);
      assert.match(c.err, /from cudaDeviceSynchronize\(\) at stress\.cu:\d+/);
      const b = parseBuiltinOutput(c.out);
      assert.equal(b.stressFinal, null, "killed before its final line");
      assert.ok(b.stress.length < 9, "it died with the fault, not at its end");
    }
    assert.equal(state(dir).gpus[0]!.mps?.doomed, undefined, "recovery over once all exited");
    assert.equal((await run(dir, "mps-control", [], undefined, "quit\n")).code, 0);
    assert.equal(state(dir).gpus[0]!.mps, undefined);
    const after = await run(dir, "mps-control", [], undefined, "quit\n");
    assert.equal(after.code, 1);
    assert.match(after.err, /Cannot find MPS control daemon process/);
  });

  it("without MPS the other clients finish normally", async () => {
    const { clients, ends } = await faultAmongClients(false);
    for (const [k, c] of clients.entries()) {
      assert.equal(ends[k]!.code, 0, c.err);
      assert.ok(parseBuiltinOutput(c.out).stressFinal);
    }
  });
});
