// Topology, NVLink and the multi-GPU all_reduce floor on a simulated whole-card 2x H100 SXM node
// over real sshd: clean, the topology check passes (NV18, 18/18 links) and the all_reduce runs
// over P2P above the floor; with `sim fault nvlink-down --gpu 1` the topology check fails
// (NVLINK_DOWN) and the all_reduce falls back to host memory below the floor
// (BUSBW_BELOW_FLOOR). The figures printed are the closing note's.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

const TOPO = "topology and NVLink of the 2 whole GPUs";
const MULTI = "all_reduce across 2 whole GPUs (-g 2) completes without wrong results";

describe("nccl topology and NVLink (simulated whole-card 2x H100 SXM, real sshd)", function () {
  this.timeout(180_000);
  let c: TestCluster;
  before(async () => {
    c = await startCluster([{ name: "whole01", gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
  });
  after(async () => {
    await c?.stop();
  });

  async function run(tag: string): Promise<{ code: number; checks: CheckRecord[] }> {
    const out = join(c.dir, tag);
    const r = await cli(
      ...["run", "-i", c.inventoryPath, "--suites", "nccl", "--duration", "2", "--out", out],
    );
    const checks = readFileSync(join(out, "checks.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as CheckRecord);
    return { code: r.code, checks };
  }
  const find = (cs: CheckRecord[], title: string) => {
    const x = cs.find((k) => k.title === title);
    assert.ok(x, `no check '${title}' among ${cs.map((k) => k.title).join(" | ")}`);
    return x;
  };

  it("passes clean: NV18 with every link up, the all_reduce over P2P above the floor", async () => {
    const { code, checks } = await run("clean");
    const topo = find(checks, TOPO);
    assert.equal(topo.status, "passed", topo.message);
    assert.equal(topo.figures.topology, "NV18");
    assert.equal(topo.figures["GPU 1 NVLinks active"], "18/18");
    // nvlink -e was read: its counters are figures (zero on a healthy simulated node).
    assert.equal(topo.figures["NVLink CRC errors"], 0);
    assert.equal(topo.figures["NVLink replay errors"], 0);
    const multi = find(checks, MULTI);
    assert.equal(multi.status, "passed", multi.message);
    assert.match(String(multi.figures.transport), /^P2P \(P2P\/CUMEM\/read\)/);
    assert.equal(multi.figures["busbw floor GB/s"], 191);
    assert.ok(Number(multi.figures["largest size busbw GB/s"]) > 191);
    assert.equal(code, 0);
    console.log(
      `      figure: whole-card -g 2 clean: busbw ${multi.figures["largest size busbw GB/s"]} GB/s at 128 MiB (avg ${multi.figures["busbw GB/s"]}), transport ${multi.figures.transport}`,
    );
  });

  it("with nvlink-down on GPU 1 fails the topology check and the floor", async () => {
    const f = await cli(
      "sim",
      "fault",
      "whole01",
      "nvlink-down",
      "--gpu",
      "1",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(f.code, 0, f.stderr);
    const { code, checks } = await run("down");
    const topo = find(checks, TOPO);
    assert.equal(topo.status, "failed");
    assert.equal(topo.code, "NVLINK_DOWN");
    assert.match(topo.message, /GPU 1: 0 of 18 NVLinks active/);
    assert.match(topo.message, /GPU 0 - GPU 1: SYS in topo -m, not NV#/);
    const multi = find(checks, MULTI);
    assert.equal(multi.status, "failed");
    assert.equal(multi.code, "BUSBW_BELOW_FLOOR");
    assert.match(String(multi.figures.transport), /^SHM/);
    assert.ok(Number(multi.figures["largest size busbw GB/s"]) < 191);
    assert.equal(code, 1);
    console.log(
      `      figure: whole-card -g 2 nvlink-down: busbw ${multi.figures["largest size busbw GB/s"]} GB/s at 128 MiB (avg ${multi.figures["busbw GB/s"]}), transport ${multi.figures.transport}`,
    );
  });
});
