// Batched writes against a real PostgreSQL (started by the test as `nobody`): one instance's
// figures beyond one statement's 65535 parameters are written whole, and a controller
// SIGKILLed while its batches are being committed leaves only whole instances behind.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import pg from "pg";
import { insertStatements, MAX_PARAMS } from "../../src/store/batch.js";
import { Recorder } from "../../src/store/recorder.js";
import type { Measurement } from "../../src/workloads/launcher.js";
import { usePostgres } from "../helpers/postgres.js";

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

  it("one instance's figures beyond one statement's parameter limit are written whole", async () => {
    const url = await freshDb();
    // 13 columns: 5041 rows fill one statement; 6000 need a second one, in the same transaction.
    const ms = figures("MIG-big", 6000);
    const cols = 13;
    assert.ok(ms.length * cols > MAX_PARAMS.postgres, "more parameters than one statement takes");
    const shape = {
      table: "measurements",
      columns: Array.from({ length: cols }, (_, i) => `c${i}`),
      rows: ms.map(() => Array.from({ length: cols }, () => 0)),
    };
    assert.equal(insertStatements(shape, MAX_PARAMS.postgres).length, 2, "two statements");
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
