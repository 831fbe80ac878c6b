// A planted tenant's readings: within ±15 points of its mean, narrowed near 0 and 100 so that
// the mean stays the planted one, and summed (capped at 100) over the tenants of one unit.
import assert from "node:assert/strict";
import { clearFaults, plantFault } from "../../src/faults.js";
import type { SimProcess } from "../../src/nvsmi/state.js";
import { TENANT_JITTER, tenantReading, tenantsBusy } from "../../src/nvsmi/tenant.js";
import { cleanupNodes, SimNode } from "./helpers.js";

/** Evenly spread draws in [0, 1): their mean is the middle, as a uniform draw's expectation. */
const draws = (n: number) => Array.from({ length: n }, (_, i) => (i + 0.5) / n);

const proc = (busyPct?: number): SimProcess => ({
  pid: 1,
  name: "python3",
  type: "C",
  gi: null,
  ci: null,
  usedMiB: 3072,
  ...(busyPct === undefined ? {} : { busyPct }),
});

describe("sim tenant readings", () => {
  it("a 30 % tenant reads within 15..45 and averages 30", () => {
    const xs = draws(101).map((r) => tenantReading(30, () => r));
    assert.ok(Math.min(...xs) >= 30 - TENANT_JITTER && Math.max(...xs) <= 30 + TENANT_JITTER);
    assert.ok(Math.max(...xs) - Math.min(...xs) > 25, "the readings jitter");
    assert.ok(Math.abs(xs.reduce((a, b) => a + b, 0) / xs.length - 30) < 0.01);
  });

  it("near the ends the jitter narrows, so 5 % and 95 % keep their means and stay in 0..100", () => {
    for (const mean of [0, 5, 95, 100]) {
      const xs = draws(101).map((r) => tenantReading(mean, () => r));
      assert.ok(Math.min(...xs) >= 0 && Math.max(...xs) <= 100, String(mean));
      assert.ok(Math.abs(xs.reduce((a, b) => a + b, 0) / xs.length - mean) < 0.01, String(mean));
    }
  });

  it("a unit without tenants reads none; two tenants add up, capped at 100", () => {
    assert.equal(tenantsBusy([proc()]), null);
    assert.equal(
      tenantsBusy([proc(30), proc(40), proc()], () => 0.5),
      70,
    );
    assert.equal(
      tenantsBusy([proc(80), proc(60)], () => 0.5),
      100,
    );
  });
});

describe("sim fault tenant", () => {
  after(cleanupNodes);

  it("plants a tenant nvidia-smi shows busy on a whole GPU and N/A under MIG; --clear removes it", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.65.06", gpus: 2 });
    await n.setup("-i 1 -mig 1", "mig -i 1 -cgi 9,9 -C");
    await plantFault(n.dir, "tenant", { gpu: 0, name: "30" });
    const mig = await plantFault(n.dir, "tenant", { gpu: 1, name: "75@gi2" });
    assert.match(mig.detail, /keeps 75 % of GPU 1 GI 2 busy on average/);
    const q = await n.run(
      "--query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits",
    );
    const [g0, g1] = q.out.trim().split("\n");
    const [, util, mem] = g0!.split(", ").map(Number);
    assert.ok(util! >= 15 && util! <= 45, g0);
    assert.equal(mem, 3072);
    assert.match(g1!, /^1, \[N\/A\], \d+$/);
    assert.equal(n.state().gpus[1]!.processes[0]!.gi, 2);
    assert.equal((await clearFaults(n.dir)).length, 2);
    assert.deepEqual(
      n.state().gpus.map((g) => g.processes.length),
      [0, 0],
    );
  });

  it("refuses a share outside 0-100, a GI the GPU lacks, and a MIG GPU without a GI", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.65.06", gpus: 1 });
    await assert.rejects(
      plantFault(n.dir, "tenant", { name: "130" }),
      /PCT a mean busy share 0-100/,
    );
    await assert.rejects(
      plantFault(n.dir, "tenant", { name: "30@gi1" }),
      /GPU 0 has no GPU instance 1 \(MIG is off\)/,
    );
    await n.setup("-i 0 -mig 1");
    await assert.rejects(
      plantFault(n.dir, "tenant", { name: "30" }),
      /in MIG mode with no GPU instance/,
    );
  });
});
