// `BENCH=isolation npm run bench`: wall time of `slicecheck run --suites isolation` on 1, 2 and
// 4 simulated nodes (H100, two 3g instances each). The nodes run side by side, so 4 nodes
// should take about what 1 takes (goal: within 1.3x). Prints figures; asserts nothing.
// BENCH_ISO_FAULTS (default kill,crash) and BENCH_ISO_S (the --duration, default 2) size it.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Per node: [first scenario invoke, last event] from the run's history, in seconds from the
 * first event of the run: how much the nodes overlapped. */
function spans(out) {
  const events = readFileSync(join(out, "history.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  const t0 = Math.min(...events.map((e) => Date.parse(e.time)));
  const by = new Map();
  for (const e of events) {
    const t = (Date.parse(e.time) - t0) / 1000;
    const s = by.get(e.node) ?? { from: t, to: t };
    by.set(e.node, { from: Math.min(s.from, t), to: Math.max(s.to, t) });
  }
  return [...by]
    .sort()
    .map(([n, s]) => `${n} ${s.from.toFixed(1)}-${s.to.toFixed(1)}s`)
    .join(", ");
}

export function benchIsolation(root) {
  const cli = join(root, "bin", "slicecheck.js");
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-iso-"));
  const inv = join(dir, "sim.yaml");
  const faults = process.env.BENCH_ISO_FAULTS ?? "kill,crash";
  const durationS = process.env.BENCH_ISO_S ?? "2";
  const sc = (...args) =>
    execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8" });
  try {
    sc("sim", "up", "--nodes", "4", "--gpu", "H100-80GB", "--inventory", inv);
    sc(
      "apply",
      "-i",
      inv,
      "test/fixtures/isolation-layout.yaml",
      "-c",
      "two-3g",
      "--allow-reset",
      "--journal-dir",
      join(dir, "journal"),
    );
    const rows = [];
    let base = 0;
    for (const [count, sel] of [
      [1, "sim01"],
      [2, "sim01,sim02"],
      [4, "all"],
    ]) {
      const out = join(dir, `iso-${count}`);
      const t = process.hrtime.bigint();
      const r = spawnSync(
        process.execPath,
        [
          cli,
          "run",
          "-i",
          inv,
          "--nodes",
          sel,
          "--suites",
          "isolation",
          "--faults",
          faults,
          "--aggressors",
          "1",
          "--duration",
          durationS,
          "--out",
          out,
          "--db",
          join(dir, "bench.db"),
          "--json",
        ],
        { cwd: root, encoding: "utf8" },
      );
      const wall = Number(process.hrtime.bigint() - t) / 1e9;
      base ||= wall;
      rows.push({
        nodes: count,
        "wall (s)": wall.toFixed(1),
        "x 1 node": (wall / base).toFixed(2),
        exit: r.status,
        "scenario spans (history.jsonl)": spans(out),
      });
    }
    console.log(
      `isolation (--faults ${faults} --aggressors 1 --duration ${durationS}) on 1, 2 and 4 simulated H100 nodes with two 3g instances; goal: 4 nodes within 1.3x of 1`,
    );
    console.table(rows);
  } finally {
    spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}
