// The records database on a real SQLite file: schema migration, and diff's comparison rules.

import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openDb, SCHEMA_VERSION } from "../../src/store/db.js";
import { comparePerformance, compareTopology } from "../../src/store/diff.js";
import type { GpuTopo, MeasurementRow } from "../../src/store/query.js";
import { snapshot } from "../../src/store/query.js";
import { Recorder } from "../../src/store/recorder.js";
import { openStore } from "../../src/store/store.js";
import { tempDir } from "../helpers/tmp.js";

describe("store: records database", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir("store");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("migrates an empty file to the current schema, in WAL mode, and reopens it unchanged", () => {
    const path = join(dir, "empty.db");
    writeFileSync(path, "");
    const db = openDb(path);
    assert.equal(db.pragma("user_version", { simple: true }), SCHEMA_VERSION);
    assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
        name: string;
      }[]
    ).map((t) => t.name);
    assert.deepEqual(tables, [
      "checks",
      "gpus",
      "measurements",
      "nodes",
      "runs",
      "step_durations",
      "topology",
      "verdicts",
      "xids",
    ]);
    db.close();
    const again = openDb(path);
    assert.equal(again.pragma("user_version", { simple: true }), SCHEMA_VERSION);
    again.close();
  });

  it("refuses a file written by a newer schema (exit 3), leaving it untouched", () => {
    const path = join(dir, "newer.db");
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    assert.throws(() => openDb(path), /newer than this slicecheck knows/);
  });

  it("resolves a run by label, a driver to its latest run per node, and refuses an unknown one", async () => {
    const path = join(dir, "r.db");
    for (const [runId, label] of [
      ["sc-1", "old"],
      ["sc-2", "new"],
    ] as const) {
      const rec = await Recorder.start(path, { runId, label, argv: [] });
      rec.node(
        {
          node: "n1",
          inventory: {
            driver: label === "old" ? "535.183.01" : "580.65.06",
            cuda: null,
            instances: [],
          },
          suites: [],
          error: null,
        },
        new Map(),
        null,
      );
      assert.equal(await rec.finish("passed"), null);
    }
    const db = await openStore(path, { mustExist: true });
    assert.equal((await snapshot(db, "new")).picked[0]?.runId, "sc-2");
    assert.equal((await snapshot(db, "535.183.01")).picked[0]?.runId, "sc-1");
    assert.equal((await snapshot(db, "sc-1")).kind, "run");
    await assert.rejects(snapshot(db, "nope"), /neither a run id, a run label nor a driver/);
    await db.close();
  });
});

function rows(profile: string, values: number[]): MeasurementRow[] {
  return values.map((value, i) => ({
    node: "n1",
    product: "H100-80GB",
    profile,
    workload: "stress",
    metric: "tflops",
    unit: "TFLOP/s",
    value,
    repetition: i + 1,
  }));
}

describe("store: diff rules", () => {
  it("reports a change only beyond both the tolerance and the repetitions' spread", () => {
    const before = [...rows("1g.10gb", [10, 10.1]), ...rows("3g.40gb", [30, 33])];
    // 1g: -20 %, tight repetitions; 3g: -8 %, but its repetitions already spread 10 %.
    const after = [...rows("1g.10gb", [8, 8.05]), ...rows("3g.40gb", [28, 29.5])];
    const r = comparePerformance(before, after, 0.05);
    assert.equal(r.compared, 2);
    assert.deepEqual(
      r.findings.map((f) => [f.profile, f.regression]),
      [["1g.10gb", true]],
    );
    assert.ok(Math.abs((r.findings[0]?.change ?? 0) + 0.2) < 0.01);
  });

  it("names a profile renamed on the same ID, a removed one, and changed placements", () => {
    const p = (name: string, id: number, memoryGiB = 9.75, sm = 16) => ({
      name,
      id,
      free: 7,
      total: 7,
      memoryGiB,
      p2p: false,
      sm,
      dec: 1,
      enc: 0,
      ce: 1,
      jpeg: 1,
      ofa: 0,
    });
    const gpu = (profiles: GpuTopo["profiles"], starts: number[]): GpuTopo => ({
      node: "n1",
      gpu: 0,
      product: "H100-80GB",
      layout: null,
      profiles,
      placements: [{ profileId: 19, starts, size: 1 }],
      instances: [],
    });
    const found = compareTopology(
      [gpu([p("1g.10gb", 19), p("1g.20gb", 15), p("7g.80gb", 0)], [0, 1, 2, 3, 4, 5, 6])],
      [gpu([p("1g.12gb", 19), p("7g.80gb", 0, 79)], [0, 1, 2, 3, 4, 5])],
    ).map((f) => f.detail);
    assert.deepEqual(found, [
      "profile 1g.10gb (ID 19) renamed to 1g.12gb",
      "profile 1g.20gb (ID 15) removed",
      "profile 7g.80gb: memory 9.75 → 79 GiB",
      "profile ID 19 placements {0,1,2,3,4,5,6}:1 → {0,1,2,3,4,5}:1",
    ]);
  });
});
