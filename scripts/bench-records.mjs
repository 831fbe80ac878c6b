// `BENCH=records npm run bench`: time per recorded measurement, the SQLite file against a local
// PostgreSQL (started here as `nobody`, fsync on, over TCP on 127.0.0.1), in the same run, and
// their ratio (issue 25's goal: PostgreSQL within 2× of SQLite). The measurements are written
// as a stress run writes them: per node, one Recorder.measurements() call per MIG instance (its
// tflops and errors), the node's instances queued together, and the node flushed before the
// next one starts; and, in rows of their own, every node's calls queued before one flush, as a
// fleet whose nodes finish at once writes them (commits of up to GROUP_ROWS rows); then,
// timed apart, settled (the one durable commit a run makes before its records count as written).
// Both backends make the same promise for the batches (they outlast the controller's death, a
// crash of the database's host may lose the last moments of them: SQLite synchronous=NORMAL,
// PostgreSQL synchronous_commit=off, src/store/pg-commit.ts) and commit the settle durably.
// Then PostgreSQL's floor under a node's commit: a round trip, and the node's statement alone,
// sent as the recorder sends it but without the recorder, against SQLite's whole commit.
// BENCH_RECORDS_ROOT measures another build (a checkout of main, for the before figure).
// Prints figures; asserts nothing.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { med as median } from "./bench-scale.mjs";
import { sqliteOptLevel } from "./setup.mjs";

const INSTANCES = 7;
const FIGURES = ["tflops", "errors"];

/** One instance's figures of one stress run. */
function figures(node, i) {
  return FIGURES.map((metric) => ({
    node,
    gpuUuid: "GPU-1",
    instanceUuid: `MIG-${node}-${i}`,
    profile: "1g.10gb",
    placement: `${i}:1`,
    workload: "stress",
    metric,
    value: metric === "tflops" ? 10 + Math.random() : 0,
    unit: metric === "tflops" ? "TFLOP/s" : "count",
    repetition: 1,
  }));
}

/** `together`: every node's calls queued before one flush, as a fleet whose nodes finish at
 * once writes them (the recorder groups them into commits of up to GROUP_ROWS rows). */
async function measure(Recorder, location, runId, nodes, together) {
  const rec = await Recorder.start(location, { runId, argv: [] });
  const t = process.hrtime.bigint();
  for (let n = 0; n < nodes; n++) {
    for (let i = 0; i < INSTANCES; i++)
      rec.measurements("stress", figures(`n${n}`, i), "NVIDIA H100 80GB HBM3");
    if (!together) await rec.flush();
  }
  await rec.flush();
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  // Once per run, apart: it flushes (fsyncs) the log the batches left unflushed. A build
  // before settle() (BENCH_RECORDS_ROOT) committed every batch durably instead.
  const s = process.hrtime.bigint();
  const lost = await (rec.settle?.() ?? rec.flush());
  if (lost) throw lost;
  const settleMs = Number(process.hrtime.bigint() - s) / 1e6;
  const failed = await rec.finish("passed");
  if (failed) throw failed;
  return { ms, settleMs, commits: rec.stats.commits ?? rec.stats.writes };
}

/**
 * PostgreSQL's floor under one node's commit, without the recorder: a round trip of a prepared
 * `SELECT 1`, and the very statement the recorder sends for one node (its 14 rows, relaxed,
 * prepared: batch.ts, pg-commit.ts), each alone on one connection, median ms of `n`.
 */
async function pgFloor(built, url, n = 300) {
  const pg = (await import("pg")).default;
  const { Recorder, MEASUREMENT_COLUMNS } = await import(join(built, "dist/store/recorder.js"));
  const batch = await import(join(built, "dist/store/batch.js"));
  const { relaxedStatement, writeStatement } = await import(join(built, "dist/store/pg-commit.js"));
  const rec = await Recorder.start(url, { runId: "bench-floor", argv: [] });
  const rows = Array.from({ length: INSTANCES }, (_, i) =>
    figures("n0", i).map((m) => [
      ...["bench-floor", m.node, m.gpuUuid, m.instanceUuid, "H100", m.profile, m.placement],
      ...["stress", m.workload, m.metric, m.value, m.unit, m.repetition],
    ]),
  ).flat();
  const shape = { table: "measurements", columns: MEASUREMENT_COLUMNS, rows };
  // A build before rows went as JSON (BENCH_RECORDS_ROOT) sent them as a VALUES list.
  const [insert] = batch.rowsStatements
    ? batch.rowsStatements("postgres", shape)
    : batch.insertStatements(shape, 65_535);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const time = async (q) => {
    const ms = [];
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      await c.query(q());
      ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    return median(ms);
  };
  try {
    const roundTrip = await time(() => ({ name: "bench_floor_rt", text: "SELECT 1" }));
    const stmt = relaxedStatement(insert.sql);
    const node = await time(() => writeStatement(stmt, insert.params, true));
    return { roundTrip, node, rows: rows.length };
  } finally {
    await c.end();
    await rec.finish("passed");
  }
}

/** The backends compared: a label, the location, PGOPTIONS for the session (if any), and
 * whether the nodes' writes are queued together (else flushed node by node). */
function backends(dir, server) {
  const sqlite = join(dir, "bench.db");
  return [
    ["SQLite (WAL, synchronous=NORMAL)", sqlite, "", false],
    ["PostgreSQL 127.0.0.1 (fsync on)", server.url, "", false],
    // The server set to synchronous_commit=off by its operator: the settle commits relaxed
    // too (the batches already are); before settle() existed, the like-for-like figure.
    ["PostgreSQL, server synchronous_commit=off", server.url, "-c synchronous_commit=off", false],
    ["SQLite, every node queued together", sqlite, "", true],
    ["PostgreSQL (fsync on), every node queued together", server.url, "", true],
  ];
}

async function measureWith(pgoptions, f) {
  const saved = process.env.PGOPTIONS;
  if (pgoptions) process.env.PGOPTIONS = pgoptions;
  try {
    return await f();
  } finally {
    if (saved === undefined) delete process.env.PGOPTIONS;
    else process.env.PGOPTIONS = saved;
  }
}

/** The run sizes measured (BENCH_MEASUREMENTS, comma-separated): one stress run of 72 nodes, and
 * a fleet's ten times that. At 1008 measurements a round is 12-40 ms and this machine's spread
 * moved the queued ratio between 1.72× and 2.78× in seven runs; at 10 010 it stayed within
 * 1.33-1.75× in six. */
function sizes() {
  return String(process.env.BENCH_MEASUREMENTS ?? "1000,10000")
    .split(",")
    .map(Number)
    .filter((x) => x > 0);
}

/** The rounds at one size, then its table and ratios; answers SQLite's time for one node's
 * measurements (ms), which the floor's line compares with. */
async function benchSize(ctx, size) {
  const { Recorder, list, reps, built, root } = ctx;
  const perNode = INSTANCES * FIGURES.length;
  const nodes = Math.ceil(size / perNode);
  const runs = list.map(() => []);
  for (let round = 0; round <= reps; round++)
    for (let k = 0; k < list.length; k++) {
      const i = (round + k) % list.length;
      const [, location, pgoptions, together] = list[i];
      const r = await measureWith(pgoptions, () =>
        measure(Recorder, location, `bench-${ctx.n++}`, nodes, together),
      );
      if (round > 0) runs[i].push(r);
    }
  const rows = list.map(([backend], i) => {
    const ms = runs[i].map((r) => r.ms);
    return {
      backend,
      measurements: nodes * perNode,
      commits: runs[i][0]?.commits,
      "wall (ms)": Math.round(median(ms)),
      "per measurement (ms)": Number((median(ms) / (nodes * perNode)).toFixed(4)),
      "min-max (ms)": `${Math.round(Math.min(...ms))}-${Math.round(Math.max(...ms))}`,
      "settle, once (ms)": Number(median(runs[i].map((r) => r.settleMs)).toFixed(1)),
    };
  });
  console.log(
    `records: ${nodes} nodes × ${INSTANCES} instances × ${FIGURES.length} figures, one measurements() call per instance, flushed per node unless the row says queued together; a warm-up round, then median of ${reps} (BENCH_REPS), each round starting with the next backend (${built === root ? "this build" : built})`,
  );
  console.table(rows);
  const [sqlite, durable, async, sqliteAll, pgAll] = rows.map((r) => r["per measurement (ms)"]);
  console.log(
    `records: ${nodes * perNode} measurements: PostgreSQL / SQLite per measurement = ${(durable / sqlite).toFixed(2)}× (fsync on), ${(async / sqlite).toFixed(2)}× (server synchronous_commit=off), flushed node by node; ${(pgAll / sqliteAll).toFixed(2)}× with every node queued together; goal ≤ 2×`,
  );
  return sqlite * perNode;
}

/**
 * One round per repetition, after a round that is thrown away: a server just started, and a
 * file just created, answer their first statements from cold caches, and whichever backend went
 * first paid for it (the first PostgreSQL row read 0.068-0.081 ms against the second's 0.060
 * with the same relaxed batches). Each round starts with the next backend, so none is always
 * first; the figures are medians.
 */
export async function benchRecords(root) {
  const built = process.env.BENCH_RECORDS_ROOT ?? root;
  const { Recorder } = await import(join(built, "dist/store/recorder.js"));
  const { startPostgres } = await import(join(root, "dist/sim/postgres.js"));
  const reps = Number(process.env.BENCH_REPS ?? 5);
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-records-"));
  chmodSync(dir, 0o755);
  const server = await startPostgres(join(dir, "pg"), { durable: true });
  const list = backends(dir, server);
  const ctx = { Recorder, list, reps, built, root, n: 0 };
  let floor = null;
  const sqlitePerNode = [];
  try {
    for (const size of sizes()) sqlitePerNode.push(await benchSize(ctx, size));
    floor = await pgFloor(built, server.url);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const [perNodeSqlite] = sqlitePerNode;
  console.log(
    `records: PostgreSQL's floor per node, without the recorder: a round trip ${floor.roundTrip.toFixed(3)} ms, the node's ${floor.rows}-row INSERT alone ${floor.node.toFixed(3)} ms = ${(floor.node / perNodeSqlite).toFixed(2)}× SQLite's whole commit of a node (${perNodeSqlite.toFixed(3)} ms, the first size)`,
  );
  // The set-up compiles SQLite at -O1 (setup.mjs nativeEnv): a slower SQLite flatters the ratio.
  const opt = sqliteOptLevel(built);
  console.log(
    `records: SQLite compiled at ${opt ?? "a level not recorded (a prebuilt binary?)"}${opt && opt !== "-O3" ? "; better-sqlite3's own builds use -O3 (npm rebuild better-sqlite3)" : ""}`,
  );
}
