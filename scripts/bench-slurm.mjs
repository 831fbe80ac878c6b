// `BENCH=slurm npm run bench`: probe-job latency through a real Slurm (`sim up --slurm`): the
// wall time of each slurm-suite probe (srun over the node's SSH session, scheduling, the job's
// start, its 2 s stress) less the stress itself. Prints figures; asserts nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function benchSlurm(root) {
  const cli = join(root, "bin", "slicecheck.js");
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-slurm-"));
  const inv = join(dir, "sim.yaml");
  const sc = (...a) => execFileSync(process.execPath, [cli, ...a], { cwd: root, encoding: "utf8" });
  try {
    sc("sim", "up", "--nodes", "1", "--slurm", "--inventory", inv);
    sc("exec", "-i", inv, "--", "scontrol update nodename=sim01 state=drain reason=bench");
    sc(
      "apply",
      "-i",
      inv,
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--journal-dir",
      join(dir, "journal"),
    );
    sc("exec", "-i", inv, "--", "scontrol update nodename=sim01 state=resume");
    const rows = [];
    for (let rep = 0; rep < Number(process.env.BENCH_REPS ?? 3); rep++) {
      const out = join(dir, `out${rep}`);
      spawnSync(
        process.execPath,
        [cli, "run", "-i", inv, "--suites", "slurm", "--db", join(dir, "r.db"), "--out", out],
        { cwd: root, stdio: "ignore" },
      );
      for (const line of readFileSync(join(out, "checks.jsonl"), "utf8").split("\n")) {
        if (!line) continue;
        const c = JSON.parse(line);
        if (typeof c.figures?.latencyMs === "number")
          rows.push({
            probe: c.title.replace(/^probe job on (\S+).*/, "$1"),
            rep,
            "wall (ms)": c.figures.wallMs,
            "latency (ms)": c.figures.latencyMs,
          });
      }
    }
    console.log("slurm: probe jobs (srun --gres=gpu:<profile>:1 over SSH, 2 s stress excluded)");
    console.table(rows);
  } finally {
    spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}
