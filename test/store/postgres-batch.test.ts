// Batched writes against a real PostgreSQL (started by the test as `nobody`): one instance's
// figures beyond what a VALUES list could bind (65535 parameters) are written whole in one
// statement, every value reads back as written, and a controller SIGKILLed while its batches
// are being committed leaves only whole instances behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import pg from "pg";
import { applyOps, rowsStatements } from "../../src/store/batch.js";
import { Recorder } from "../../src/store/recorder.js";
import { openStore } from "../../src/store/store.js";
import type { Measurement } from "../../src/workloads/launcher.js";
import { usePostgres } from "../helpers/postgres.js";

const STEP_COLUMNS = ["run_id", "node", "gpu", "step", "ms"];

function figures(instance: string, n: number): Measurement[] {
  return Array.from({ length: n }, (_, i) => ({
    node: "n1",
    gpuUuid: "GPU-1",
    instanceUuid: instance,
    profile: "1g.10gb",
    placement: "0:1",
    workload: "stress",
    metric: "tflops",
    value: i + 0.25,
    unit: "TFLOP/s",
    repetition: i,
  }));
}

describe("store: batched writes to PostgreSQL (real server)", function () {
  this.timeout(90_000);
  const server = usePostgres();
  let n = 0;
  async function freshDb(): Promise<string> {
    const name = `b${++n}_${process.pid}`;
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    return server.url.replace(/\/postgres$/, `/${name}`);
  }
  async function query<T>(url: string, sql: string): Promise<T[]> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  }

  it("one instance's figures beyond a VALUES list's parameter limit go whole in one statement", async () => {
    const url = await freshDb();
    // 13 columns: a VALUES list of 6000 rows would bind 78000 parameters, past the 65535 limit.
    const ms = figures("MIG-big", 6000);
    const cols = 13;
    assert.ok(ms.length * cols > 65_535, "more rows than one VALUES list could bind");
    const shape = {
      table: "measurements",
      columns: Array.from({ length: cols }, (_, i) => `c${i}`),
      rows: ms.map(() => Array.from({ length: cols }, () => 0)),
    };
    const statements = rowsStatements("postgres", shape);
    assert.deepEqual(
      statements.map((s) => s.params.length),
      [1],
      "one statement, one parameter",
    );
    const rec = await Recorder.start(url, { runId: "big", argv: [] });
    rec.measurements("stress", ms, "NVIDIA H100 80GB HBM3");
    rec.measurements("stress", figures("MIG-small", 2), "NVIDIA H100 80GB HBM3");
    assert.equal(await rec.finish("passed"), null);
    const got = await query<{ i: string; n: string; lo: number; hi: number; sum: number }>(
      url,
      `SELECT instance_uuid AS i, count(*) AS n, min(repetition) AS lo, max(repetition) AS hi,
         sum(value) AS sum FROM measurements GROUP BY 1 ORDER BY 1`,
    );
    assert.deepEqual(got, [
      { i: "MIG-big", n: "6000", lo: 0, hi: 5999, sum: (5999 * 6000) / 2 + 0.25 * 6000 },
      { i: "MIG-small", n: "2", lo: 0, hi: 1, sum: 1.5 },
    ]);
  });

  it("every value reads back as written: non-finite and exact numbers, bigints, nulls, any text", async () => {
    const url = await freshDb();
    const text = `quote ' "double" back\\slash\nline\ttab é 中 🚀 {"json": [1]} ?`;
    const values = [Number.NaN, Infinity, -Infinity, 0.1 + 0.2, 1e-300, -0.5, 2 ** 53 - 1];
    const ms = values.map((value, i) => ({
      ...figures(`MIG-${i}`, 1)[0],
      value,
      placement: i === 0 ? null : text,
      repetition: i,
    })) as Measurement[];
    const rec = await Recorder.start(url, { runId: "exact", argv: [] });
    rec.measurements("stress", ms, "NVIDIA H100 80GB HBM3");
    assert.equal(await rec.finish("passed"), null);
    // A bigint (better-sqlite3 takes them, and pg binds them) reads back as its integer.
    const store = await openStore(url);
    const row = ["exact", "n1", 2n ** 31n - 1n, "create", 1.5];
    await applyOps(store, [{ table: "step_durations", columns: STEP_COLUMNS, rows: [row] }]);
    await store.close();
    const steps = await query<{ gpu: string }>(url, "SELECT gpu::text AS gpu FROM step_durations");
    assert.deepEqual(steps, [{ gpu: String(2n ** 31n - 1n) }]);
    const got = await query<{ v: number; p: string | null }>(
      url,
      "SELECT value AS v, placement AS p FROM measurements ORDER BY repetition",
    );
    assert.deepEqual(
      got,
      values.map((v, i) => ({ v, p: i === 0 ? null : text })),
    );
  });

  it("a controller SIGKILLed while committing batches leaves whole instances only", async () => {
    const url = await freshDb();
    const per = 40;
    // Batches of 25 instances queued at once, one after the other, until killed.
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { Recorder } from ${JSON.stringify(new URL("../../src/store/recorder.ts", import.meta.url).href)};
         const figures = ${figures.toString()};
         const rec = await Recorder.start(process.env.URL, { runId: "killed", argv: [] });
         for (let b = 0; ; b++) {
           for (let i = 0; i < 25; i++) rec.measurements("stress", figures("MIG-" + b + "-" + i, ${per}), "x");
           await rec.flush();
         }`,
      ],
      { env: { ...process.env, URL: url }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_c, s) => r(s)));
    const count = async () =>
      Number(
        (
          await query<{ n: string }>(url, "SELECT count(*) AS n FROM measurements").catch(() => [])
        )[0]?.n ?? 0,
      );
    // Several batches in: the kill lands while later ones are being sent or committed.
    let seen = 0;
    const end = Date.now() + 60_000;
    for (;;) {
      seen = await count();
      if (seen >= 5 * 25 * per || Date.now() > end || child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(seen >= 5 * 25 * per, `the child committed batches (${seen} rows; ${stderr})`);
    child.kill("SIGKILL");
    assert.equal(await exited, "SIGKILL");
    const partial = await query<{ i: string; n: string }>(
      url,
      `SELECT instance_uuid AS i, count(*) AS n FROM measurements GROUP BY 1 HAVING count(*) <> ${per}`,
    );
    assert.deepEqual(partial, [], "no instance is cut");
    const status = await query<{ status: string }>(url, "SELECT status FROM runs");
    assert.deepEqual(status, [{ status: "running" }], "the killed run never finished");
    assert.ok((await count()) >= seen, "what was committed before the kill stays");
  });
});
