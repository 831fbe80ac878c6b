// How the recorder commits to the SQLite file: batches with the file's synchronous=NORMAL (they
// outlast the controller's death), the run's start, settle and finish with FULL (they outlast
// the machine's power loss, and take every earlier commit with them). Read back by triggers,
// inside the statements themselves, from the real file.
import assert from "node:assert/strict";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Recorder } from "../../src/store/recorder.js";
import { tempDir } from "../helpers/tmp.js";

// SQLite's own numbers for the setting: 1 NORMAL, 2 FULL.
const NORMAL = 1;
const FULL = 2;

/** One instance's tflops figure. */
const one = (i: number) => ({
  node: "n1",
  gpuUuid: "GPU-1",
  instanceUuid: `MIG-${i}`,
  profile: "1g.10gb",
  placement: `${i}:1`,
  workload: "stress",
  metric: "tflops",
  value: 1,
  unit: "TFLOP/s",
  repetition: 1,
});

describe("store: how the SQLite file commits the records", () => {
  it("batches commit with synchronous=NORMAL; start, settle and finish with FULL, NORMAL after", async () => {
    const path = join(tempDir("commit"), "records.db");
    const first = await Recorder.start(path, { runId: "schema", argv: [] });
    assert.equal(await first.finish("passed"), null);
    const db = new Database(path);
    db.exec(`
      CREATE TABLE seen (n INTEGER PRIMARY KEY, what TEXT NOT NULL, setting INTEGER NOT NULL);
      CREATE TRIGGER note_measurements BEFORE INSERT ON measurements BEGIN
        INSERT INTO seen (what, setting) SELECT 'measurements', synchronous FROM pragma_synchronous;
      END;
      CREATE TRIGGER note_insert BEFORE INSERT ON runs BEGIN
        INSERT INTO seen (what, setting) SELECT 'runs INSERT', synchronous FROM pragma_synchronous;
      END;
      CREATE TRIGGER note_update BEFORE UPDATE ON runs BEGIN
        INSERT INTO seen (what, setting) SELECT 'runs UPDATE', synchronous FROM pragma_synchronous;
      END;`);
    db.close();
    const rec = await Recorder.start(path, { runId: "r1", argv: [] });
    for (let i = 0; i < 3; i++) rec.measurements("stress", [one(i)], "NVIDIA H100 80GB HBM3");
    assert.equal(await rec.flush(), null);
    assert.equal(await rec.settle(), null);
    // A relaxed write after a durable one: the setting was put back.
    rec.measurements("stress", [one(9)], "NVIDIA H100 80GB HBM3");
    assert.equal(await rec.flush(), null);
    assert.equal(await rec.finish("passed"), null);
    const check = new Database(path, { readonly: true });
    const seen = check.prepare("SELECT what, setting FROM seen ORDER BY n").all();
    check.close();
    assert.deepEqual(seen, [
      { what: "runs INSERT", setting: FULL },
      { what: "measurements", setting: NORMAL },
      { what: "measurements", setting: NORMAL },
      { what: "measurements", setting: NORMAL },
      { what: "runs UPDATE", setting: FULL },
      { what: "measurements", setting: NORMAL },
      { what: "runs UPDATE", setting: FULL },
    ]);
  });
});
