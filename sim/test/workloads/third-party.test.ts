// The simulated gpu_burn and all_reduce_perf, read back with the parsers the harness uses on real
// outputs (src/workloads/parsers/gpu-burn.ts, nccl-tests.ts).
import assert from "node:assert/strict";
import { parseGpuBurn } from "../../../src/workloads/parsers/gpu-burn.js";
import { parseNcclTests } from "../../../src/workloads/parsers/nccl-tests.js";
import { smRates } from "../../src/workloads/model.js";
import { cleanup, migUuid, node, run } from "./helpers.js";

describe("gpu_burn (simulated workloads)", function () {
  this.timeout(30_000);
  afterEach(cleanup);

  it("burns one MIG device: `\\r` progress at the model's Gflop/s, then `GPU 0: OK`, exit 0", async () => {
    const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19,9 -C");
    const r = await run(dir, "gpu_burn", ["-m", "2000", "-tc", "2"], migUuid(dir, 0, 19));
    assert.equal(r.code, 0, r.err);
    assert.ok(r.out.includes("\r"), "progress is reprinted with a carriage return");
    const g = parseGpuBurn(r.out);
    assert.deepEqual(g.gpus, [{ index: 0, status: "OK" }]);
    const expected = 16 * smRates("H100-80GB", "hopper").tf32 * 1000 * 0.81;
    const got = g.progress?.gflops[0] ?? 0;
    assert.ok(Math.abs(got / expected - 1) < 0.03, `${got} Gflop/s against ${expected}`);
    assert.match(
      r.out,
      /^Initialized device 0 with 9984 MB of memory \(\d+ MB available, using 2000 MB of it\), using FLOATS, using Tensor Cores$/m,
    );
    assert.match(
      r.out,
      /^ {2}MIG 1g\.10gb {5}Device {2}\d: \(UUID: MIG-/m,
      "nvidia-smi -L lists the MIG devices",
    );
  });

  it("finds no CUDA device on a MIG GPU without CUDA_VISIBLE_DEVICES (exit 19)", async () => {
    const dir = await node("A100-40GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19 -C");
    const r = await run(dir, "gpu_burn", ["2"]);
    assert.equal(r.code, 19);
    // The child's uncaught std::string, then the parent's message (capture gpu-burn_rtx3080tix2).
    const errors = parseGpuBurn(r.out + r.err).errors;
    assert.match(errors[0] ?? "", /^terminate called after throwing an instance of 'std::/);
    assert.equal(errors[1], "No CUDA devices");
  });

  it("a client that cannot start is DIED, and with none alive gpu_burn aborts (exit 123)", async () => {
    const dir = await node("A100-40GB", 2);
    const r = await run(dir, "gpu_burn", ["-i", "5", "3"]);
    assert.equal(r.code, 123);
    const g = parseGpuBurn(r.out + r.err);
    assert.equal(g.aborted, true);
    assert.equal(g.died, true);
  });
});

describe("all_reduce_perf (simulated workloads)", function () {
  this.timeout(30_000);
  afterEach(cleanup);

  it("one rank on one MIG device: the real table, busbw 0", async () => {
    const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 9 -C");
    const r = await run(
      dir,
      "all_reduce_perf",
      ["-b", "8", "-e", "128M", "-f", "2", "-g", "1"],
      migUuid(dir, 0, 9),
    );
    assert.equal(r.code, 0, r.err);
    const n = parseNcclTests(r.out);
    assert.equal(n.ranks.length, 1);
    assert.match(n.ranks[0]!.name, / MIG 3g\.40gb$/);
    assert.equal(n.rows.length, 25);
    assert.ok(n.rows.every((x) => x.outOfPlace.busbw === 0 && x.inPlace.busbw === 0));
    assert.equal(n.avgBusBandwidth, 0);
    assert.equal(n.outOfBounds, 0);
    // Out-of-place bandwidth grows with size up to the GI's share of the copy bandwidth.
    const last = n.rows.at(-1)!.outOfPlace;
    assert.ok(last.algbw > 500 && last.algbw < (3350 * 4) / 8 / 2, `${last.algbw} GB/s`);
  });

  it("-g 2 inside one MIG slice: `Invalid number of GPUs`, exit 5", async () => {
    const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19,19 -C");
    const r = await run(dir, "all_reduce_perf", ["-g", "2"], migUuid(dir, 0, 19));
    assert.equal(r.code, 5);
    const n = parseNcclTests(r.out + r.err);
    assert.deepEqual(n.failures.map((f) => f.kind).sort(), ["invalid-gpu-count", "test-failure"]);
  });

  it("-g 2 across whole GPUs: busbw = algbw × 2(n-1)/n, up to the NVLink model", async () => {
    const dir = await node("A100-80GB", 2);
    const r = await run(dir, "all_reduce_perf", ["-b", "1M", "-e", "512M", "-f", "4", "-g", "2"]);
    assert.equal(r.code, 0, r.err);
    const n = parseNcclTests(r.out);
    assert.equal(n.ranks.length, 2);
    for (const row of n.rows) {
      assert.ok(Math.abs(row.outOfPlace.busbw - row.outOfPlace.algbw) <= 0.011);
    }
    const top = n.rows.at(-1)!.outOfPlace.busbw;
    assert.ok(top > 200 && top <= 236, `${top} GB/s`);
    assert.ok((n.avgBusBandwidth ?? 0) > 0);
  });
});
