// The report's pictures as strings: for a given input the cells, placements and colours are
// there (read back from the SVG's own data attributes, as a browser would select them).
import assert from "node:assert/strict";
import { signoffModel } from "../../src/report/signoff/model.js";
import { gpuPictures } from "../../src/report/signoff/pictures.js";
import { FILL } from "../../src/report/svg/common.js";
import { isolationMatrixSvg } from "../../src/report/svg/isolation-matrix.js";
import { sliceMapSvg } from "../../src/report/svg/slice-map.js";
import { throughputSvg } from "../../src/report/svg/throughput.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";

/** The attributes of every element of `cls`, as objects. */
function elements(svg: string, cls: string): Record<string, string>[] {
  return [...svg.matchAll(new RegExp(`<rect class="${cls}"([^>]*)/>`, "g"))].map((m) =>
    Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]])),
  );
}

describe("report pictures (hand-made SVG)", () => {
  it("slice map: one bar per instance over exactly its slices, a free slice stays blank", () => {
    const svg = sliceMapSvg({
      title: "sim01 GPU 0",
      slices: 8,
      instances: [
        { label: "gpu0/gi3/ci0", profile: "2g.20gb", placement: "0:2", status: "passed" },
        { label: "gpu0/gi9/ci0", profile: "1g.10gb", placement: "2:1", status: "failed" },
        { label: "gpu0/gi2/ci0", profile: "3g.40gb", placement: "4:4" },
      ],
    });
    const gi = elements(svg, "gi");
    assert.deepEqual(
      gi.map((g) => [g["data-label"], g["data-start"], g["data-size"], g["data-status"]]),
      [
        ["gpu0/gi3/ci0", "0", "2", "passed"],
        ["gpu0/gi9/ci0", "2", "1", "failed"],
        ["gpu0/gi2/ci0", "4", "4", "none"],
      ],
    );
    // Bars are as wide as their slices: 4 slices are 4 times 1 slice.
    assert.equal(Number(gi[2]!.width), 4 * Number(gi[1]!.width));
    assert.equal(gi[1]!.fill, FILL.failed);
    // Header 0..7 and the profile with its placement as `plan` prints them.
    for (let s = 0; s < 8; s++) assert.match(svg, new RegExp(`>${s}</text>`));
    assert.doesNotMatch(svg, />8<\/text>/);
    assert.match(svg, />3g\.40gb 4:4</);
    assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
  });

  it("slice map of an A30 has slices 0..3; a whole GPU spans them all", () => {
    const svg = sliceMapSvg({
      title: "A30",
      slices: 4,
      instances: [{ label: "gpu0", profile: "whole-gpu", placement: null }],
    });
    assert.doesNotMatch(svg, />4<\/text>/);
    assert.equal(elements(svg, "gi")[0]!["data-size"], "4");
    assert.match(svg, />whole-gpu whole GPU</);
  });

  it("isolation matrix: the victim's ratio in its cell, coloured by the verdict; the aggressor's own cell marked", () => {
    const svg = isolationMatrixSvg({
      title: "sim02 GPU 0",
      instances: ["a", "b", "c"],
      tolerance: 0.05,
      faults: [
        {
          fault: "oom",
          aggressors: ["a"],
          own: { a: "passed" },
          cells: [
            { aggressor: "a", victim: "b", ratio: 0.5, status: "failed" },
            { aggressor: "a", victim: "c", ratio: 0.998, status: "failed" },
          ],
        },
        {
          fault: "crash",
          aggressors: ["b"],
          own: { b: "broken" },
          cells: [{ aggressor: "b", victim: "a", ratio: 1.01, status: "passed" }],
        },
      ],
    });
    const cells = elements(svg, "cell");
    const ab = cells.find((c) => c["data-fault"] === "oom" && c["data-victim"] === "b")!;
    assert.equal(ab["data-ratio"], "0.5");
    assert.equal(ab.fill, FILL.failed);
    assert.match(svg, />0\.50</);
    const ba = cells.find((c) => c["data-fault"] === "crash" && c["data-victim"] === "a")!;
    assert.equal(ba.fill, FILL.passed);
    // A victim the scenario did not measure (c under crash) has no figure: a dash, never 1.00.
    const bc = cells.find((c) => c["data-fault"] === "crash" && c["data-victim"] === "c")!;
    assert.equal(bc["data-status"], "none");
    const own = elements(svg, "own");
    assert.deepEqual(
      own.map((o) => [o["data-aggressor"], o["data-status"]]),
      [
        ["a", "passed"],
        ["b", "broken"],
      ],
    );
    assert.match(svg, /fault: oom/);
    assert.match(svg, /tolerance 5 %/);
  });

  it("isolation matrix: a victim that died shows died and failed, never its printed ratio", () => {
    const svg = isolationMatrixSvg({
      title: "sim02 GPU 0",
      instances: ["a", "b"],
      tolerance: 0.05,
      faults: [
        {
          fault: "crash",
          aggressors: ["a"],
          own: { a: "passed" },
          // b printed a whole run's throughput before it died: the ratio alone reads 1.00.
          cells: [{ aggressor: "a", victim: "b", ratio: 1, status: "passed", died: true }],
        },
      ],
    });
    const [b] = elements(svg, "cell");
    assert.equal(b!["data-died"], "true");
    assert.equal(b!["data-status"], "failed");
    assert.equal(b!.fill, FILL.failed);
    assert.equal(b!["data-ratio"], "");
    assert.match(svg, />died</);
    assert.doesNotMatch(svg, />1\.00</);
  });

  it("a victim that died under a crash: its GPU's matrix, from the check records, says died", () => {
    const inst = (gi: number, placement: string) => ({
      gpu: 0,
      label: `gpu0/gi${gi}/ci0`,
      profile: "3g.40gb",
      placement,
      sm: 60,
      uuid: `MIG-${gi}`,
      mig: true,
    });
    const [A, B] = [inst(1, "4:4"), inst(2, "0:4")];
    const rec = (verdict: string, status: CheckRecord["status"], figures = {}): CheckRecord => ({
      id: verdict,
      suite: "isolation",
      node: "sim01",
      gpu: 0,
      instance: { profile: A.profile, placement: A.placement, label: A.label, uuid: A.uuid },
      title: `crash: ${verdict}`,
      fullTitle: `crash: ${verdict}`,
      status,
      code: status === "failed" ? "ISOLATION_VIOLATION" : "OK",
      message: status === "failed" ? `${B.label} died (exit 2)` : "",
      figures,
      evidence: [],
      steps: [],
      parameters: { fault: "crash", aggressor: A.label, verdict, mode: "mig" },
      startMs: 0,
      stopMs: 1,
    });
    const checks = [
      rec("victimsUnaffected", "failed", {
        tolerance: 0.05,
        // What the victim printed before it died equals its baseline.
        [`${B.label} baseline TFLOP/s`]: 30,
        [`${B.label} under fault TFLOP/s`]: 30,
        [`${B.label} died`]: true,
      }),
      rec("faultContained", "passed"),
    ];
    const m = signoffModel({
      runId: "sc-test",
      label: null,
      startedAt: "2026-12-01T00:00:00Z",
      finishedAt: "2026-12-01T00:01:00Z",
      durationS: 60,
      exitCode: 1,
      layout: null,
      suites: ["isolation"],
      nodes: [
        {
          node: "sim01",
          driver: "580.65.06",
          cuda: "13.0",
          gpus: [{ index: 0, name: "NVIDIA H100 80GB HBM3", uuid: "GPU-1" }],
          error: null,
          instances: [A, B],
        },
      ],
      allChecks: checks,
    });
    const matrix = gpuPictures(m.gpus[0]!, m.checks).matrix ?? "";
    const cell = elements(matrix, "cell").find((c) => c["data-victim"] === B.label);
    assert.equal(cell?.["data-died"], "true");
    assert.equal(cell?.["data-status"], "failed");
    assert.match(matrix, />died</);
    assert.doesNotMatch(matrix, />1\.00</);
  });

  it("throughput: a bar per instance at its TFLOP/s, the expected mark, the percentage", () => {
    const svg = throughputSvg({
      title: "sim01 GPU 0",
      bars: [
        { label: "x", profile: "3g.40gb", tflops: 30, expected: 30, status: "passed" },
        { label: "y", profile: "1g.10gb", tflops: 2, expected: 2.5, status: "failed" },
        { label: "z", profile: "1g.10gb", tflops: null, expected: null, status: "broken" },
      ],
    });
    const bars = elements(svg, "bar");
    assert.equal(bars.length, 3);
    assert.equal(bars[1]!.fill, FILL.failed);
    assert.ok(Number(bars[0]!.width) > Number(bars[1]!.width) * 10);
    assert.equal(bars[2]!.width, "0.0");
    assert.equal((svg.match(/class="expected"/g) ?? []).length, 2);
    assert.match(svg, /2\.00 \/ 2\.50 \(80\.0 %\)/);
    assert.match(svg, />no figure</);
  });

  it("escapes what it is given", () => {
    const svg = sliceMapSvg({
      title: "<script>",
      slices: 8,
      instances: [{ label: 'a"&b', profile: "1g", placement: "0:1" }],
    });
    assert.doesNotMatch(svg, /<script>/);
    assert.match(svg, /data-label="a&quot;&amp;b"/);
  });
});
