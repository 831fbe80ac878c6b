// `BENCH=workloads npm run bench`: harness overhead of a stress (BENCH_STRESS_S, default 30 s)
// on 7 MIG instances of one node, on 4 nodes (28), and on one node whose logins are slow (every
// login shell first sleeps 0.5 s, as a real node's start-up files make it: `sim up
// --login-delay`). Per row, besides the whole run's overhead: the SSH sessions each node's sshd
// opened for the run (its own log, LogLevel VERBOSE: one `Starting session: command` line per
// channel), and the stress phase's overhead: its wall time on the controller less the longest
// workload's own span on the node (its end record, `nodeElapsedS` in `--json`). Prints figures;
// asserts nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Sessions each node's sshd has started so far, by node. */
function sessions(inv) {
  // The sim keeps a cluster beside its inventory: `.<name>.d/` (sim/src/cluster.ts clusterDirFor).
  const nodes = join(dirname(inv), `.${basename(inv).replace(/\.ya?ml$/, "")}.d`, "nodes");
  const out = new Map();
  for (const n of readdirSync(nodes)) {
    let log = "";
    try {
      log = readFileSync(join(nodes, n, "sshd.log"), "utf8");
    } catch {
      /* no connection yet */
    }
    out.set(n, log.split("\n").filter((l) => l.includes("Starting session: command")).length);
  }
  return out;
}

/** Per node: the stress phase's wall time (its checks' stress steps, controller clock) less the
 * longest workload's span on the node; the largest over the nodes, in seconds. */
function phaseOverheadS(summary) {
  const by = new Map();
  for (const c of summary.checks.filter((x) => x.suite === "stress" && x.node)) {
    const step = c.steps.find((s) => s.name === "stress");
    const node = c.figures.nodeElapsedS;
    if (!step || typeof node !== "number") continue;
    const b = by.get(c.node) ?? { from: Infinity, to: 0, longest: 0 };
    by.set(c.node, {
      from: Math.min(b.from, step.startMs),
      to: Math.max(b.to, step.stopMs),
      longest: Math.max(b.longest, node),
    });
  }
  const per = [...by.values()].map((b) => (b.to - b.from) / 1000 - b.longest);
  return per.length ? Math.max(...per) : Number.NaN;
}

export function benchWorkloads(root, dir) {
  const cli = join(root, "bin", "slicecheck.js");
  const sc = (...args) =>
    execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8" });
  const durationS = Number(process.env.BENCH_STRESS_S ?? 30);
  const fast = join(dir, "wl.yaml");
  const slow = join(dir, "wl-slow", "wl.yaml");
  const clusters = [
    [fast, "4", []],
    [slow, "1", ["--login-delay", "0.5"]],
  ];
  try {
    for (const [inv, n, extra] of clusters) {
      sc("sim", "up", "--nodes", n, "--gpu", "H100-80GB", "--inventory", inv, ...extra);
      const journal = join(dirname(inv), "journal");
      sc(
        "apply",
        "-i",
        inv,
        "fixtures/layouts/default.yaml",
        "-c",
        "all-1g.10gb",
        "--journal-dir",
        journal,
      );
    }
    const rows = [];
    for (const [label, inv, sel] of [
      ["1 node, 7 instances", fast, "sim01"],
      ["4 nodes, 28 instances", fast, "all"],
      ["1 node, 7 instances, 0.5 s logins", slow, "all"],
    ]) {
      const before = sessions(inv);
      const t = process.hrtime.bigint();
      const out = join(dirname(inv), `wl-${sel}-${rows.length}`);
      const json = sc(
        ...["run", "-i", inv, "--nodes", sel, "--duration", String(durationS), "--out", out],
        ...["--db", join(dirname(inv), "bench.db"), "--json"],
      );
      const wall = Number(process.hrtime.bigint() - t) / 1e9;
      const s = JSON.parse(json);
      const after = sessions(inv);
      const used = s.nodes.map(
        (x) => (after.get(x.node ?? x.name) ?? 0) - (before.get(x.node ?? x.name) ?? 0),
      );
      const conns = s.nodes.map((x) => x.connections);
      const phase = phaseOverheadS(s);
      rows.push({
        run: label,
        "stress (s)": durationS,
        "wall (s)": wall.toFixed(2),
        "overhead (%)": (((wall - durationS) / durationS) * 100).toFixed(1),
        "phase overhead (s)": phase.toFixed(2),
        "phase overhead (%)": ((phase / durationS) * 100).toFixed(1),
        passed: s.checks.filter((c) => c.suite === "stress" && c.status === "passed").length,
        "SSH sessions per node per run": `${Math.min(...used)}-${Math.max(...used)}`,
        "connections per node": `${Math.min(...conns)}-${Math.max(...conns)}`,
      });
    }
    console.log(
      "harness overhead of `slicecheck run --suites stress`: the whole run (Node start-up, connect and lock, instance discovery, the on-node build check, the records, teardown and the reports) and the stress phase alone (its wall time less the longest workload's span on the node); SSH sessions per node from each node's sshd log (every command's login, the utilization sampler's included)",
    );
    console.table(rows);
  } finally {
    for (const [inv] of clusters) {
      spawnSync(
        process.execPath,
        [cli, "restore", "-i", inv, "--journal-dir", join(dirname(inv), "journal")],
        { cwd: root, stdio: "ignore" },
      );
      spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], { stdio: "ignore" });
    }
  }
}
