// `BENCH=slurm npm run bench`: through a real Slurm (`sim up --slurm`, 4 simulated nodes):
// probe-job latency (the wall time of each slurm-suite probe, srun over the node's SSH session,
// scheduling, the job's start, its 2 s stress, less the stress itself), the same under --drain
// (the run opens its drained node to its probes in a reservation of its own), and the wall time
// of a 4-node stress run dispatched by Slurm (`--via slurm`, one pinned job array) against a
// direct one. Prints figures; asserts nothing.
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
    sc("sim", "up", "--nodes", "4", "--slurm", "--inventory", inv);
    sc(
      "exec",
      "-i",
      inv,
      "--nodes",
      "sim01",
      "--",
      "scontrol update nodename=sim01 state=drain reason=bench",
    );
    sc(
      "apply",
      "-i",
      inv,
      "--nodes",
      "sim01",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--journal-dir",
      join(dir, "journal"),
    );
    sc("exec", "-i", inv, "--nodes", "sim01", "--", "scontrol update nodename=sim01 state=resume");
    const rows = [];
    const reps = Number(process.env.BENCH_REPS ?? 3);
    for (let rep = 0; rep < 2 * reps; rep++) {
      const out = join(dir, `out${rep}`);
      const drain = rep >= reps;
      spawnSync(
        process.execPath,
        [
          cli,
          "run",
          "-i",
          inv,
          "--nodes",
          "sim01",
          "--suites",
          "slurm",
          ...(drain ? ["--drain"] : []),
          "--db",
          join(dir, "r.db"),
          "--out",
          out,
        ],
        { cwd: root, stdio: "ignore" },
      );
      for (const line of readFileSync(join(out, "checks.jsonl"), "utf8").split("\n")) {
        if (!line) continue;
        const c = JSON.parse(line);
        if (typeof c.figures?.latencyMs === "number")
          rows.push({
            probe: c.title.replace(/^probe job on (\S+).*/, "$1"),
            run: drain ? `--drain ${rep - reps}` : `plain ${rep}`,
            "wall (ms)": c.figures.wallMs,
            "latency (ms)": c.figures.latencyMs,
          });
      }
    }
    console.log(
      "slurm: probe jobs (srun --gres=gpu:<profile>:1 over SSH, 2 s stress excluded; --drain: in the run's own reservation, the node resumed under it for the probes)",
    );
    console.table(rows);
    const walls = [];
    for (let rep = 0; rep < reps; rep++)
      for (const via of [false, true]) {
        const t0 = Date.now();
        const r = spawnSync(
          process.execPath,
          [
            cli,
            "run",
            "-i",
            inv,
            ...(via ? ["--via", "slurm"] : []),
            "--suites",
            "stress",
            "--duration",
            "5",
            "--db",
            join(dir, "r.db"),
            "--out",
            join(dir, `wall-${via}-${rep}`),
            "--quiet",
          ],
          { cwd: root, stdio: "ignore" },
        );
        walls.push({
          run: via ? "--via slurm (one job array)" : "direct (SSH)",
          rep,
          exit: r.status,
          "wall (s)": ((Date.now() - t0) / 1000).toFixed(1),
        });
      }
    console.log("slurm: 4 nodes (one H100 each, sim01 in MIG all-balanced), stress 5 s");
    console.table(walls);
  } finally {
    spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], { stdio: "ignore" });
    rmSync(dir, { recursive: true, force: true });
  }
}
