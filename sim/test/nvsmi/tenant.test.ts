// A planted tenant's readings: within ±15 points of its mean, narrowed near 0 and 100 so that
// the mean stays the planted one, and summed (capped at 100) over the tenants of one unit.
import assert from "node:assert/strict";
import type { SimProcess } from "../../src/nvsmi/state.js";
import { TENANT_JITTER, tenantReading, tenantsBusy } from "../../src/nvsmi/tenant.js";

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
