// `BENCH=records npm run bench`: time per recorded measurement (one transaction each, as a
// run writes them), the SQLite file against a local PostgreSQL (started here as `nobody`,
// fsync on, over TCP on 127.0.0.1). Prints figures; asserts nothing.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function benchRecords(root) {
  const { Recorder } = await import(join(root, "dist/store/recorder.js"));
  const { startPostgres } = await import(join(root, "dist/sim/postgres.js"));
  const n = Number(process.env.BENCH_MEASUREMENTS ?? 1000);
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-records-"));
  chmodSync(dir, 0o755);
  const server = await startPostgres(join(dir, "pg"), { durable: true });
  const m = (i) => ({
    node: "n1",
    gpuUuid: "GPU-1",
    instanceUuid: `MIG-${i % 7}`,
    profile: "1g.10gb",
    placement: `${i % 7}:1`,
    workload: "stress",
    metric: "tflops",
    value: 10 + Math.random(),
    unit: "TFLOP/s",
    repetition: i,
  });
  const rows = [];
  try {
    for (const [backend, location] of [
      ["SQLite (WAL, synchronous=NORMAL)", join(dir, "bench.db")],
      ["PostgreSQL 127.0.0.1 (fsync on)", server.url],
    ]) {
      const rec = await Recorder.start(location, { runId: `bench-${rows.length}`, argv: [] });
      const t = process.hrtime.bigint();
      for (let i = 0; i < n; i++) rec.measurement("stress", m(i), "NVIDIA H100 80GB HBM3");
      await rec.flush();
      const wall = Number(process.hrtime.bigint() - t) / 1e6;
      const each = rec.stats.ms / rec.stats.writes;
      await rec.finish("passed");
      rows.push({
        backend,
        measurements: n,
        "wall (ms)": Math.round(wall),
        "per measurement (ms)": Number(each.toFixed(3)),
      });
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log("records: one transaction per measurement, written in order behind the run");
  console.table(rows);
}
