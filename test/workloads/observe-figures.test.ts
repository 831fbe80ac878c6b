// The seed's figures from an observation's samples, and the readings they come from (dcgmi
// dmon and nvidia-smi output), without a node: a 30 %-busy series is under 50 % busy all the
// time with a mean of 30, a 75 %-busy one never; idle and memory shares; the diff of two.
import assert from "node:assert/strict";
import { utilizationSvg } from "../../src/report/svg/utilization.js";
import { compareObservations, type ObservationRow } from "../../src/store/observe.js";
import type { ObservedUnit, ObserveSample } from "../../src/workloads/observe.js";
import { readingFromDmon, readingFromNvsmi } from "../../src/workloads/observe.js";
import {
  figureMetrics,
  isIdle,
  percentile,
  summaryLine,
  unitFigures,
} from "../../src/workloads/observe-figures.js";

/** A series of `n` samples jittering ±15 around `mean` (deterministic: a triangle wave). */
function series(mean: number, n: number, memUsedMiB: number | null = 3084): ObserveSample[] {
  return Array.from({ length: n }, (_, i) => ({
    t: i * 1000,
    busyPct: mean + 15 * (((i % 7) - 3) / 3),
    memUsedMiB,
  }));
}

const gpu0: ObservedUnit = {
  node: "sim01",
  gpu: 0,
  gpuUuid: "GPU-0",
  gpuName: "NVIDIA H100 80GB HBM3",
  gpuInstanceId: null,
  profile: "whole-gpu",
  placement: null,
  memoryMiB: 81559,
  key: "GPU-0",
};

describe("observe figures", () => {
  it("a 30 %-busy series: under 50 % all the time, mean ~30, not idle", () => {
    const f = unitFigures(series(30, 70), 81559);
    assert.equal(f.samples, 70);
    assert.equal(f.under50Share, 1);
    assert.ok(Math.abs(f.busyMean! - 30) < 1, String(f.busyMean));
    assert.ok(f.busyP95! > f.busyP50! && f.busyP95! <= 45, JSON.stringify(f));
    assert.equal(f.idleShare, 0);
    assert.equal(f.memUsedMean, 3084);
    assert.match(summaryLine(gpu0, f), /^GPU 0 under 50 % busy 100 % of the time \(mean 30 %/);
  });

  it("a 75 %-busy series is never under 50 %; an idle one is idle all the time", () => {
    assert.equal(unitFigures(series(75, 70), null).under50Share, 0);
    const idle = unitFigures(
      series(0, 10).map((s) => ({ ...s, busyPct: 1 })),
      null,
    );
    assert.equal(idle.idleShare, 1);
    assert.equal(idle.under50Share, 1);
  });

  it("idle without a busy reading is decided by memory: no CUDA context, no tenant", () => {
    assert.equal(isIdle({ t: 0, busyPct: null, memUsedMiB: 37 }), true);
    assert.equal(isIdle({ t: 0, busyPct: null, memUsedMiB: 3109 }), false);
    assert.equal(isIdle({ t: 0, busyPct: null, memUsedMiB: null }), null);
    const f = unitFigures([{ t: 0, busyPct: null, memUsedMiB: 37 }], 40192);
    assert.equal(f.busyMean, null);
    assert.equal(f.under50Share, null);
    assert.deepEqual(
      figureMetrics(f).map((m) => m.metric),
      ["samples", "idle_share", "memory_used_mean", "memory_used_max", "memory_offered"],
    );
  });

  it("percentiles are nearest-rank", () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(xs, 50), 50);
    assert.equal(percentile(xs, 95), 95);
    assert.equal(percentile([7], 95), 7);
  });

  it("reads a GI's row from dmon through the entity map, and nvidia-smi's [N/A] as no busy reading", () => {
    const gi: ObservedUnit = { ...gpu0, gpuInstanceId: 2, profile: "3g.40gb", key: "GPU-0/gi2" };
    const dmon = [
      "#Entity          SMACT       FBUSD",
      "ID",
      "GPU 0            0.129        3121",
      "GPU-I 0          0.000          37",
      "GPU-I 1          0.301        3109",
    ].join("\n");
    const got = readingFromDmon(dmon, [gpu0, gi], new Map([[1, { gpu: 0, gi: 2 }]]));
    assert.deepEqual(got.get("GPU-0"), { busyPct: 12.9, memUsedMiB: 3121 });
    assert.deepEqual(got.get("GPU-0/gi2"), { busyPct: 30.1, memUsedMiB: 3109 });
    const q = readingFromNvsmi("0, GPU-0, NVIDIA H100 80GB HBM3, 81559, [N/A], 3121\n", null, [
      gpu0,
    ]);
    assert.deepEqual(q.get("GPU-0"), { busyPct: null, memUsedMiB: 3121 });
  });

  it("diff of two observations shows the busy share moving, never as a regression", () => {
    const rows = (busy: number, under: number): ObservationRow[] =>
      [
        ["busy_mean", busy],
        ["under50_share", under],
        ["idle_share", 0],
        ["memory_used_mean", 3084],
        ["memory_offered", 81559],
      ].map(([metric, value]) => ({
        node: "sim01",
        gpu: 0,
        product: "H100-80GB",
        profile: "whole-gpu",
        placement: null,
        metric: metric as string,
        value: value as number,
        unit: "%",
      }));
    const f = compareObservations(rows(30.2, 100), rows(74.9, 0));
    assert.equal(f.length, 1);
    assert.equal(f[0]!.subject, "sim01 GPU 0 (H100-80GB) whole GPU");
    assert.match(f[0]!.detail, /^busy mean 30\.2 → 74\.9 %, under 50 % busy 100 → 0 % of the time/);
    assert.equal(f[0]!.regression, false);
    assert.deepEqual(compareObservations(rows(30.2, 100), rows(31, 100)), []);
  });

  it("draws one strip per unit, a bar per sample, memory where busy is not read", () => {
    const svg = utilizationSvg("t", [
      { label: "GPU 0", busy: [30, 40], memUsed: [1, 1], memOffered: 10, figures: "x" },
      { label: "GI 1", busy: [null, null], memUsed: [5, 5], memOffered: 10, figures: "y" },
    ]);
    assert.equal((svg.match(/class="busy"/g) ?? []).length, 2);
    assert.equal((svg.match(/class="memory" data-value="50.0"/g) ?? []).length, 2);
    assert.match(svg, /memory in use % \(busy not read\)/);
  });
});
