// `BENCH=rollout npm run bench`: a maintenance window through a real Slurm (`sim up --slurm`, 4
// simulated nodes): the wall time of `slicecheck rollout` one node at a time and two at a time
// (each batch drained, verified, resumed), against one `run --drain` of the same suites on all
// four at once. What node by node costs is the price of keeping the rest of the partition in
// service. Prints figures; asserts nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function benchRollout(root) {
  const cli = join(root, "bin", "slicecheck.js");
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-rollout-"));
  const inv = join(dir, "sim.yaml");
  const suites = process.env.BENCH_ROLLOUT_SUITES ?? "stress,health";
  const duration = process.env.BENCH_ROLLOUT_S ?? "10";
  const common = ["-i", inv, "--suites", suites, "--duration", duration, "--db", join(dir, "r.db")];
  const timed = (args) => {
    const t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, stdio: "ignore" });
    return { s: Number(process.hrtime.bigint() - t) / 1e9, code: r.status };
  };
  try {
    execFileSync(
      process.execPath,
      [cli, "sim", "up", "--nodes", "4", "--slurm", "--inventory", inv],
      {
        cwd: root,
        stdio: "ignore",
      },
    );
    const rows = [];
    const row = (how, r) => rows.push({ how, "wall (s)": r.s.toFixed(1), exit: r.code });
    row(
      "run --drain, 4 nodes at once",
      timed(["run", ...common, "--drain", "--out", join(dir, "all")]),
    );
    for (const n of [1, 2])
      row(
        `rollout --max-unavailable ${n}`,
        timed([
          "rollout",
          ...common,
          "--max-unavailable",
          String(n),
          "--state",
          join(dir, `w${n}.json`),
        ]),
      );
    console.log(`rollout: ${suites} for ${duration} s on 4 simulated nodes under a real Slurm`);
    console.table(rows);
  } finally {
    spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], {
      cwd: root,
      stdio: "ignore",
    });
    rmSync(dir, { recursive: true, force: true });
  }
}
