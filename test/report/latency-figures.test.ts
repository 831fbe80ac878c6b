// Latency beside throughput on the compliance page (issue 22 item 3): a serving check's row
// reads its p50, p99 and requests/s; a latency verdict's row its worst victim's p99 rise with
// both p99s; the isolation scenarios carry each victim's p99 alone and under the fault beside
// its TFLOP/s.
import assert from "node:assert/strict";
import { headlineFigure } from "../../src/report/signoff/figures.js";
import { scenariosOf } from "../../src/report/signoff/isolation.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";

const check = (c: Partial<CheckRecord>): CheckRecord =>
  ({
    suite: "isolation",
    node: "n1",
    gpu: 0,
    status: "passed",
    message: "",
    parameters: {},
    figures: {},
    ...c,
  }) as CheckRecord;

describe("compliance page: latency beside throughput", () => {
  it("a serving check's headline is its p50, p99 and requests/s", () => {
    const c = check({ suite: "serving", figures: { p50_ms: 0.0964, p99_ms: 0.1161, rps: 6402 } });
    assert.equal(headlineFigure(c), "p50 0.096 ms · p99 0.116 ms · 6402 req/s");
  });

  it("a latency verdict's headline is its worst victim, and the scenario keeps each victim's p99", () => {
    const v = "gpu0/gi2/ci0";
    const w = "gpu0/gi3/ci0";
    const lat = check({
      status: "failed",
      parameters: { verdict: "victimsLatencyUnaffected", fault: "oom", aggressor: "gpu0/gi1/ci0" },
      figures: {
        [`${v} baseline p99 ms`]: 0.115,
        [`${v} under fault p99 ms`]: 0.462,
        [`${v} p99 rise`]: 4.02,
        [`${w} baseline p99 ms`]: 0.115,
        [`${w} under fault p99 ms`]: 0.116,
        [`${w} p99 rise`]: 1.01,
      },
    });
    assert.equal(
      headlineFigure(lat),
      `worst victim p99 ×4.02 of baseline (${v}: 0.462 ms vs 0.115 ms)`,
    );
    const thr = check({
      parameters: { verdict: "victimsUnaffected", fault: "oom", aggressor: "gpu0/gi1/ci0" },
      figures: {
        [`${v} baseline TFLOP/s`]: 20,
        [`${v} under fault TFLOP/s`]: 19.9,
        [`${w} baseline TFLOP/s`]: 20,
        [`${w} under fault TFLOP/s`]: 20,
        tolerance: 0.05,
      },
    });
    const [sc] = scenariosOf([thr, lat], "n1", 0);
    const mine = sc!.victims.find((x) => x.label === v)!;
    assert.equal(mine.underFault, 19.9);
    assert.equal(mine.baselineP99Ms, 0.115);
    assert.equal(mine.underFaultP99Ms, 0.462);
    assert.equal(sc!.allPassed, false, "the latency failure counts against the scenario");
  });
});
