// `slicecheck advise`'s parts on sacct histories of realistic shapes (test/fixtures/sacct, each
// saying which docs its shape follows): the parser folds steps into jobs and names a bad line
// FILE:LINE; the analysis finds each job's smallest MIG profile; the recommendation is a 1g-heavy
// layout for small jobs and "do not slice" where 8-GPU jobs hold the hours.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { analyse } from "../../src/report/advise/analyse.js";
import { fitJob } from "../../src/report/advise/fit.js";
import { recommend } from "../../src/report/advise/recommend.js";
import { parseSacct, type SacctJob } from "../../src/report/advise/sacct.js";
import { elapsedSeconds, sizeBytes } from "../../src/report/advise/tres.js";
import { jobHistogramSvg } from "../../src/report/svg/job-histogram.js";

const fixture = (name: string) => readFileSync(`test/fixtures/sacct/${name}`, "utf8");
const small = () => parseSacct(fixture("small-jobs.txt"), { file: "small-jobs.txt" });
const big = () => parseSacct(fixture("big-jobs.txt"), { file: "big-jobs.txt" });

function parseError(text: string, o: { format?: string[] } = {}): Error & { code?: string } {
  try {
    parseSacct(text, { file: "h.txt", ...o });
  } catch (e) {
    return e as Error & { code?: string };
  }
  assert.fail("expected a parse error");
}

const HEAD = "JobID|JobName|Partition|State|Elapsed|AllocTRES|ReqTRES|TRESUsageInMax";
const JOB =
  "1|j|gpu|COMPLETED|01:00:00|cpu=1,gres/gpu=1,mem=4G,node=1|cpu=1,gres/gpu=1,mem=4G,node=1|";

describe("advise: sacct -P parser", () => {
  it("reads the header's columns, folds .batch/.extern steps into their job and keeps the steps' GPU-memory peak", () => {
    const r = small();
    assert.equal(r.header, true);
    const j = r.jobs.find((x) => x.id === "40100")!;
    assert.equal(j.lines, 3);
    assert.equal(j.gpus, 1);
    assert.equal(j.gpuType, "a100");
    assert.equal(j.gpuMemUsedBytes, 3174 * 1024 ** 2);
    assert.equal(j.gpuUtilPeak, 22);
    assert.equal(j.reqMemBytes, 32 * 1024 ** 3);
    assert.equal(j.elapsedS, 6 * 3600);
    const cancelled = r.jobs.find((x) => x.id === "40132")!;
    assert.deepEqual([cancelled.state, cancelled.gpus, cancelled.elapsedS], ["CANCELLED", 1, 0]);
    assert.equal(r.jobs.find((x) => x.id === "40133")!.gpus, 0);
    assert.equal(r.jobs.length, 15);
  });

  it("reads headerless (-n) output in the given --format order, day-long elapsed times and multi-node steps", () => {
    const r = big();
    assert.equal(r.header, false);
    const j = r.jobs.find((x) => x.id === "77000")!;
    assert.deepEqual([j.gpus, j.elapsedS, j.lines], [8, 51 * 3600, 3]);
    assert.equal(j.gpuMemUsedBytes, null);
    assert.equal(r.jobs.find((x) => x.id === "77010")!.gpus, 16);
    const swapped = parseSacct("1|01:00:00|gres/gpu=2\n", {
      file: "x",
      format: ["JobID", "Elapsed", "AllocTRES"],
    });
    assert.deepEqual([swapped.jobs[0]!.gpus, swapped.jobs[0]!.elapsedS], [2, 3600]);
  });

  it("reads -p output (a trailing |), array tasks and typed-only GPU counts", () => {
    const r = parseSacct(
      `${HEAD}|\n123_4|a|gpu|RUNNING|00:10:00|gres/gpu:a100_1g.5gb=1|||\n123_4.0|a||RUNNING|00:09:00|gres/gpu:a100_1g.5gb=1||gres/gpumem=1.5G|\n`,
      { file: "p" },
    );
    const j = r.jobs[0]!;
    assert.deepEqual(
      [j.id, j.gpus, j.gpuType, j.gpuMemUsedBytes],
      ["123_4", 1, "a100_1g.5gb", 1.5 * 1024 ** 3],
    );
    assert.deepEqual(j.migRequest, { slices: 1, gib: 5 });
  });

  it("names the file and line of a line it cannot read", () => {
    const cases: [string, RegExp][] = [
      [
        `${HEAD}\n${JOB}\n1.batch|batch|gpu|COMPLETED|01:00:00\n`,
        /^h\.txt:3: 5 fields where the columns are 8/,
      ],
      [
        `${HEAD}\n${JOB.replace("01:00:00", "1h")}\n`,
        /^h\.txt:2: Elapsed '1h' is not \[DD-\]HH:MM:SS/,
      ],
      [
        `${HEAD}\n${JOB.replace("gres/gpu=1,mem=4G", "gres/gpu")}\n`,
        /^h\.txt:2: AllocTRES 'cpu=1,gres\/gpu,node=1' is not a TRES list/,
      ],
      [`${HEAD}\nabc${JOB.slice(1)}\n`, /^h\.txt:2: JobID 'abc' is not a Slurm job or step id/],
      [
        `${HEAD}\n${JOB.replace(/\|$/, "|gres/gpumem=lots")}\n`,
        /^h\.txt:2: gres\/gpumem 'lots' is not a size/,
      ],
      ["JobID|JobName\n1|x\n", /^h\.txt:1: sacct output has no elapsed column/],
    ];
    for (const [text, re] of cases) {
      const e = parseError(text);
      assert.equal(e.code, "PARSE", e.message);
      assert.match(e.message, re);
    }
  });

  it("reads sizes and elapsed times as sacct prints them", () => {
    assert.equal(sizeBytes("64G", "MiB"), 64 * 1024 ** 3);
    assert.equal(sizeBytes("4000", "MiB"), 4000 * 1024 ** 2);
    assert.equal(sizeBytes("4000", "bytes"), 4000);
    assert.equal(sizeBytes("1.5T", "bytes"), 1.5 * 1024 ** 4);
    assert.equal(sizeBytes("x", "bytes"), null);
    assert.equal(elapsedSeconds("1-02:03:04"), 93_784);
    assert.equal(elapsedSeconds("03:04"), 184);
    assert.equal(elapsedSeconds("00:01:02.500"), 62);
    assert.equal(elapsedSeconds("00:61:00"), null);
  });
});

function job(over: Partial<SacctJob>): SacctJob {
  return {
    id: "1",
    name: "j",
    partition: "gpu",
    state: "COMPLETED",
    gpus: 1,
    gpuType: null,
    gpuMemUsedBytes: null,
    gpuUtilPeak: null,
    migRequest: null,
    reqMemBytes: null,
    elapsedS: 3600,
    lines: 1,
    ...over,
  };
}

describe("advise: which MIG profile a job fits", () => {
  it("takes the smallest profile with the memory used plus headroom, the one a MIG GRES type names, or none", () => {
    const GiB = 1024 ** 3;
    assert.equal(fitJob(job({ gpuMemUsedBytes: 4 * GiB }), "A100-40GB").profile, "1g.5gb");
    // 4.5 GiB + 10 % is more than 1g.5gb's 4.75 GiB.
    assert.equal(fitJob(job({ gpuMemUsedBytes: 4.5 * GiB }), "A100-40GB").profile, "1g.10gb");
    assert.equal(fitJob(job({ gpuMemUsedBytes: 30 * GiB }), "H100-80GB").profile, "3g.40gb");
    const wholeA30 = fitJob(job({ gpuMemUsedBytes: 20 * GiB }), "A30");
    assert.deepEqual([wholeA30.profile, wholeA30.wholeCard], ["4g.24gb", true]);
    assert.equal(fitJob(job({ gpuMemUsedBytes: 50 * GiB }), "A100-40GB").profile, null);
    assert.equal(
      fitJob(job({ migRequest: { slices: 2, gib: 20 } }), "H100-80GB").profile,
      "2g.20gb",
    );
    const multi = fitJob(job({ gpus: 2, gpuMemUsedBytes: GiB }), "H100-80GB");
    assert.deepEqual([multi.profile, multi.wholeCard], [null, true]);
    const unknown = fitJob(job({}), "H100-80GB");
    assert.deepEqual([unknown.basis, unknown.wholeCard], ["unknown", true]);
  });
});

describe("advise: recommendation", () => {
  it("recommends a 1g-heavy layout, planned and valid, for a small-job history", () => {
    const a = analyse(small().jobs, "A100-40GB");
    assert.deepEqual([a.jobs.length, a.skipped], [13, { cpuOnly: 1, neverRan: 1 }]);
    assert.deepEqual(
      a.histogram.map((c) => [c.gpus, c.jobs]),
      [
        ["1", 12],
        ["2", 1],
      ],
    );
    const r = recommend(a);
    assert.equal(r.kind, "slice");
    if (r.kind !== "slice") return;
    const instances = Object.entries(r.layout);
    const total = instances.reduce((s, [, n]) => s + n, 0);
    const oneG = instances.filter(([p]) => p.startsWith("1g.")).reduce((s, [, n]) => s + n, 0);
    assert.ok(oneG / total >= 0.5, `1g-heavy: ${JSON.stringify(r.layout)}`);
    assert.equal(r.split, null);
    assert.equal(r.plan.fits, true);
    assert.equal(r.plan.instances.length, total);
    assert.ok(r.servedGpuHours > 0.9 * (r.servedGpuHours + r.unservedGpuHours));
    assert.match(r.config, /mig-devices:\n(\s+1g\.\d+gb: \d+\n)+$/);
  });

  it("says do not slice for an 8-GPU-job history", () => {
    const a = analyse(big().jobs, "H100-80GB");
    assert.ok(a.multiGpuHours / a.totalGpuHours > 0.9);
    const r = recommend(a, { nodes: 4 });
    assert.equal(r.kind, "do-not-slice");
    assert.match(r.reasons[0]!, /hold 100 % of 1868\.5 GPU-hours/);
  });

  it("splits the nodes when whole-card jobs hold a middle share, in proportion to what both kinds need", () => {
    const GiB = 1024 ** 3;
    const jobs = [
      ...Array.from({ length: 14 }, (_, i) =>
        job({ id: `s${i}`, gpuMemUsedBytes: 5 * GiB, elapsedS: 3600 * 5 }),
      ),
      job({ id: "b", gpus: 8, elapsedS: 3600 * 5 }),
    ];
    const a = analyse(jobs, "H100-80GB");
    const r = recommend(a, { nodes: 10 });
    assert.equal(r.kind, "slice");
    if (r.kind !== "slice") return;
    // 40 whole-card GPU-hours against 70 small-job hours on 1g.10gb × 7: 10 card-hours.
    assert.deepEqual(r.layout, { "1g.10gb": 7 });
    assert.ok(Math.abs(r.split!.wholeShare - 0.8) < 1e-6, String(r.split!.wholeShare));
    assert.deepEqual([r.split!.wholeNodes, r.split!.slicedNodes], [8, 2]);
    // On 4 nodes, 0.8 rounds up to all of them: nothing is left to slice.
    assert.equal(recommend(a, { nodes: 4 }).kind, "do-not-slice");
  });

  it("gives no advice without GPU jobs", () => {
    assert.equal(recommend(analyse([job({ gpus: 0 })], "A30")).kind, "no-data");
  });

  it("draws the histogram: a bar per size class and per profile, with its figures", () => {
    const svg = jobHistogramSvg({
      title: "t",
      verdict: "do not slice",
      bySize: [
        { label: "1 GPU", jobs: 3, gpuHours: 4.5 },
        { label: "8 GPU", jobs: 5, gpuHours: 1480 },
      ],
      byProfile: [{ label: "1g.10gb", jobs: 3, gpuHours: 4.5 }],
    });
    assert.equal((svg.match(/class="bar"/g) ?? []).length, 3);
    assert.match(svg, /data-label="8 GPU" data-jobs="5" data-gpu-hours="1480.00"/);
  });
});
