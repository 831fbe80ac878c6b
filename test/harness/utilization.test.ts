// Utilization sampled while the stress suite runs, on a simulated MIG H100 over real sshd: with
// nv-hostengine running, `dcgmi dmon` gives each instance's SM activity and memory in use; without
// it only nvidia-smi's per-MIG-device memory is there (no SM activity). The samples are recorded
// with the run (the records database) and shown as the stress checks' figures.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openDb } from "../../src/store/db.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import {
  CUDA_CONTEXT_FLOOR_MIB,
  fromDmon,
  judgeUtilization,
  MIN_UTIL_SAMPLES,
  parseDcgmHierarchy,
  parseDmon,
  type UtilizationSample,
  utilizationMetrics,
} from "../../src/workloads/utilization.js";
import { ReadingParser } from "../../src/workloads/utilization-loop.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

const LAYOUT = join(import.meta.dirname, "..", "fixtures", "isolation-layout.yaml");

describe("utilization during stress (simulated MIG H100, real sshd)", function () {
  this.timeout(120_000);
  let c: TestCluster;
  before(async () => {
    c = await startCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
    const r = await cli(
      ...["apply", "-i", c.inventoryPath, LAYOUT, "-c", "two-3g", "--allow-reset"],
      ...["--journal-dir", join(c.dir, "journal")],
    );
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await c?.stop();
  });

  /** Measured (enough samples: the figures are there) or labelled insufficient (no figure but
   * the count, and the reason); never a figure from too few samples. */
  function measured(x: CheckRecord): boolean {
    const n = x.figures.utilization_samples as number;
    assert.ok(n >= 1, JSON.stringify(x.figures));
    if (x.figures.utilizationStatus === "measured") {
      assert.ok(n >= MIN_UTIL_SAMPLES, JSON.stringify(x.figures));
      return true;
    }
    assert.equal(x.figures.utilizationStatus, "insufficient", JSON.stringify(x.figures));
    assert.match(
      String(x.figures.utilizationInsufficient),
      n < MIN_UTIL_SAMPLES ? /fewer than the 3 a figure needs/ : /below the 64 MiB/,
    );
    assert.equal(x.figures.memory_used_max, undefined);
    assert.equal(x.figures.sm_active_max, undefined);
    return false;
  }

  async function stress(name: string) {
    const out = join(c.dir, name);
    const db = join(c.dir, `${name}.sqlite`);
    const r = await cli(
      ...["run", "-i", c.inventoryPath, "--suites", "stress", "--duration", "6"],
      ...["--out", out, "--db", db],
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const checks = readFileSync(join(out, "checks.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as CheckRecord)
      .filter((x) => x.suite === "stress" && x.instance);
    const d = openDb(db, { mustExist: true });
    try {
      const rows = d
        .prepare(
          "SELECT instance_uuid AS uuid, metric, value FROM measurements WHERE metric LIKE 'sm_active%' OR metric LIKE 'memory_used%' OR metric = 'utilization_samples'",
        )
        .all() as { uuid: string; metric: string; value: number }[];
      return { checks, rows };
    } finally {
      d.close();
    }
  }

  it("dcgmi dmon where nv-hostengine runs: SM activity and memory per instance, recorded and shown", async () => {
    const p = await cli(
      ...["sim", "fault", "sim01", "holder", "--name", "nv-hostengine", "--gpu", "0"],
      ...["--inventory", c.inventoryPath],
    );
    assert.equal(p.code, 0, p.stderr);
    try {
      const { checks, rows } = await stress("dcgm");
      assert.equal(checks.length, 2);
      for (const x of checks) {
        assert.equal(x.figures.utilizationSource, "dcgm");
        const mine = rows.filter((r) => r.uuid === x.instance!.uuid).map((r) => r.metric);
        // How many samples a loaded machine gets is not ours to fix; what each count yields is.
        if (measured(x)) {
          // The stress keeps its instance's SMs busy; its context shows as memory in use.
          assert.ok((x.figures.sm_active_max as number) >= 99, JSON.stringify(x.figures));
          assert.ok((x.figures.memory_used_max as number) >= 256);
          assert.deepEqual(mine.sort(), [
            "memory_used_max",
            "sm_active_max",
            "sm_active_mean",
            "utilization_samples",
          ]);
        } else assert.deepEqual(mine, ["utilization_samples"], "nothing but the count recorded");
      }
    } finally {
      await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    }
  });

  it("nvidia-smi's per-MIG-device memory otherwise, with no SM activity claimed", async () => {
    const { checks, rows } = await stress("smi");
    for (const x of checks) {
      assert.equal(x.figures.utilizationSource, "nvidia-smi");
      if (measured(x))
        assert.ok((x.figures.memory_used_max as number) >= 256, JSON.stringify(x.figures));
      assert.equal(x.figures.sm_active_mean, undefined);
    }
    assert.ok(!rows.some((r) => r.metric.startsWith("sm_active")));
  });
});

describe("utilization: pure reading", () => {
  it("the looping sampler's output cuts into readings at its marker lines, whatever the chunks", () => {
    const text = [
      "#Entity SMACT FBUSD",
      "GPU 0 0.5 10",
      "@@slicecheck:util discovery 0",
      "table line",
      "@@slicecheck:util dmon 0",
      "@@slicecheck:util smi 6",
      "@@slicecheck:util dmon 0 trailing",
      "",
    ].join("\n");
    // Cut at every third byte: a marker split across chunks is still one marker.
    const p = new ReadingParser();
    const got = [];
    for (let k = 0; k < text.length; k += 3) got.push(...p.feed(text.slice(k, k + 3)));
    assert.deepEqual(got, [
      { kind: "discovery", code: 0, out: "#Entity SMACT FBUSD\nGPU 0 0.5 10" },
      { kind: "dmon", code: 0, out: "table line" },
      { kind: "smi", code: 6, out: "" },
    ]);
    // A line that only looks like a marker is a reading's line, never a reading of its own.
    assert.deepEqual(p.feed("@@slicecheck:util smi 0\n"), [
      { kind: "smi", code: 0, out: "@@slicecheck:util dmon 0 trailing" },
    ]);
  });

  it("attributes GPU-I rows through dcgmi discovery -c (DCGM's entity ids are not GI ids)", () => {
    const text = [
      "#Entity          SMACT       FBUSD",
      "ID",
      "GPU 0            0.500        1000",
      "GPU-I 0          1.000         600",
      "GPU-I 1            N/A         400",
      "GPU 1            0.000          10",
    ].join("\n");
    const rows = parseDmon(text);
    assert.equal(rows.length, 4);
    const hierarchy = parseDcgmHierarchy(
      [
        "+-------------------+--------------------------------------------------------------------+",
        "| Instance Hierarchy                                                                     |",
        "+===================+====================================================================+",
        "| GPU 0             | GPU GPU-5fa64f4c-5c9f-5e24-4b8c-6e5fd2f3a8e2 (EntityID: 0)         |",
        "| -> I 0/1          | GPU Instance (EntityID: 0)                                         |",
        "|    -> CI 0/1/0    | Compute Instance (EntityID: 0)                                     |",
        "| -> I 0/2          | GPU Instance (EntityID: 1)                                         |",
        "|    -> CI 0/2/0    | Compute Instance (EntityID: 1)                                     |",
        "| GPU 1             | GPU GPU-9ab64f4c-5c9f-5e24-4b8c-6e5fd2f3a8e3 (EntityID: 1)         |",
        "+-------------------+--------------------------------------------------------------------+",
      ].join("\n"),
    );
    assert.deepEqual(
      [...hierarchy],
      [
        [0, { gpu: 0, gi: 1 }],
        [1, { gpu: 0, gi: 2 }],
      ],
    );
    const inst = (gpu: number, gi: number | null) =>
      ({ gpu, gpuInstanceId: gi, uuid: `u${gpu}${gi}` }) as Parameters<typeof fromDmon>[1][number];
    const all = [inst(0, 1), inst(0, 2), inst(1, null), inst(1, 1)];
    const m = fromDmon(rows, all, hierarchy);
    assert.deepEqual(m.get("u01"), { smActive: 1, memUsedMiB: 600 });
    assert.deepEqual(m.get("u02"), { smActive: null, memUsedMiB: 400 });
    assert.deepEqual(m.get("u1null"), { smActive: 0, memUsedMiB: 10 });
    assert.equal(m.has("u11"), false, "GPU 1 has no GPU instance 1");
    // Without the map, GPU-I 1 would be read as GI 1 (another instance's figures): none is.
    const unmapped = fromDmon(rows, all);
    assert.equal(unmapped.has("u01"), false);
    assert.equal(unmapped.has("u02"), false);
    assert.deepEqual(unmapped.get("u1null"), { smActive: 0, memUsedMiB: 10 });
    assert.throws(() => parseDmon("Error: Unable to connect to host engine"), /no #Entity/);
    assert.deepEqual(utilizationMetrics([]), []);
  });
});

describe("utilization: a figure is a measurement only when it can be one", () => {
  const samples = (mem: readonly number[]): UtilizationSample[] =>
    mem.map((m, k) => ({ t: k * 500, smActive: 0.9, memUsedMiB: m }));

  it("one sample is insufficient: the count alone is recorded, no memory or SM figure", () => {
    const j = judgeUtilization(samples([260]));
    assert.match(j.insufficient ?? "", /1 sample\(s\), fewer than the 3 a figure needs/);
    assert.deepEqual(
      j.metrics.map((m) => m.metric),
      ["utilization_samples"],
    );
    assert.deepEqual(
      utilizationMetrics(samples([260])).map((m) => m.metric),
      ["utilization_samples"],
    );
  });

  it("a peak below what a running CUDA workload holds (12 MiB under a stress) is insufficient", () => {
    const j = judgeUtilization(samples([12, 12, 12, 12]));
    assert.match(j.insufficient ?? "", /peaked at 12 MiB, below the 64 MiB/);
    assert.ok(!j.metrics.some((m) => m.metric === "memory_used_max"));
  });

  it("enough samples that saw the workload are a measurement", () => {
    const j = judgeUtilization(samples([12, 260, 262, 261]));
    assert.equal(j.insufficient, null);
    const by = Object.fromEntries(j.metrics.map((m) => [m.metric, m.value]));
    assert.equal(by.memory_used_max, 262);
    assert.equal(by.utilization_samples, 4);
    assert.equal(by.sm_active_max, 90);
    assert.equal(MIN_UTIL_SAMPLES, 3);
    assert.equal(CUDA_CONTEXT_FLOOR_MIB, 64);
  });
});
