// `BENCH=workloads npm run bench`: harness overhead of a stress (BENCH_STRESS_S, default 30 s)
// on 7 MIG instances of one node, on 4 nodes (28), and on one node whose logins are slow (every
// login shell first sleeps 0.5 s, as a real node's start-up files make it: `sim up
// --login-delay`). Per row, besides the whole run's overhead: the SSH sessions each node's sshd
// opened for the run (its own log, LogLevel VERBOSE: one `Starting session: command` line per
// channel), and the stress phase's overhead: its wall time on the controller less the longest
// workload's own span on the node (its end record, `nodeElapsedS` in `--json`); then where each
// run's seconds went (its `tasks` spans in `--json`). Prints figures; asserts nothing.
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

/** Where one run's wall time went, in seconds, from its `tasks` spans (ms since its process
 * started): Node's start-up and module load before the first span, each task, the suites task
 * split into the stress phase (its controller-clock window over every node) and the rest, the
 * teardowns, the records and reports, and the process's exit after the last span. */
function breakdownS(summary, wallS) {
  // A CLI without `tasks` in its --json (before they were added) has no breakdown.
  const tasks = summary.tasks;
  if (!tasks?.length) return { "no tasks in --json": "-" };
  const ms = (re) =>
    tasks.filter((t) => re.test(t.name) && !/^suites: /.test(t.name)).reduce((a, t) => a + t.ms, 0);
  const steps = summary.checks
    .filter((c) => c.suite === "stress")
    .flatMap((c) => c.steps.filter((x) => x.name === "stress"));
  const phase = steps.length
    ? Math.max(...steps.map((x) => x.stopMs)) - Math.min(...steps.map((x) => x.startMs))
    : 0;
  const last = tasks.reduce((a, t) => Math.max(a, t.atMs + t.ms), 0);
  const f = (x) => (x / 1000).toFixed(2);
  return {
    "start-up": f(tasks[0]?.atMs ?? 0),
    "declare+open records": f(ms(/^(read the suites|open the records)/)),
    "connect+lock": f(ms(/^connect/)),
    discover: f(ms(/^discover$/)),
    "record nodes": f(ms(/^record the nodes$/)),
    "stress phase": f(phase),
    "suites less phase": f(ms(/^suites$/) - phase),
    teardown: f(ms(/^teardown: /)),
    "records+reports": f(ms(/^(write the|close the)/)),
    exit: f(wallS * 1000 - last),
  };
}

/** One run of one row: its table row and its breakdown. `k` numbers its output folder. */
function measureRow(sc, [label, inv, sel], durationS, k) {
  const before = sessions(inv);
  const t = process.hrtime.bigint();
  const out = join(dirname(inv), `wl-${sel}-${k}`);
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
  const longest = Math.max(
    ...s.checks.filter((c) => c.suite === "stress").map((c) => c.figures.nodeElapsedS ?? 0),
  );
  const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
  // The issue's measure: wall time less the longest workload's own on-node span.
  const lessLongest = ((wall - longest) / durationS) * 100;
  return {
    lessLongest,
    part: { run: label, ...breakdownS(s, wall), "load (1 min)": load },
    row: {
      run: label,
      "stress (s)": durationS,
      "wall (s)": wall.toFixed(2),
      "overhead (%)": (((wall - durationS) / durationS) * 100).toFixed(1),
      "less longest workload (%)": lessLongest.toFixed(1),
      "phase overhead (s)": phase.toFixed(2),
      "phase overhead (%)": ((phase / durationS) * 100).toFixed(1),
      passed: s.checks.filter((c) => c.suite === "stress" && c.status === "passed").length,
      "SSH sessions per node per run": `${Math.min(...used)}-${Math.max(...used)}`,
      "connections per node": `${Math.min(...conns)}-${Math.max(...conns)}`,
    },
  };
}

/** Each row's run with the median `lessLongest` (the lower middle of an even count), and the
 * spread of that figure over its runs when there were several. */
function medianRuns(byRow) {
  return byRow.map((runs) => {
    const sorted = [...runs].sort((a, b) => a.lessLongest - b.lessLongest);
    const mid = sorted[Math.floor((sorted.length - 1) / 2)];
    if (runs.length === 1) return mid;
    const all = runs.map((r) => r.lessLongest.toFixed(1)).join(", ");
    return { ...mid, row: { ...mid.row, [`less longest, ${runs.length} runs (%)`]: all } };
  });
}

export function benchWorkloads(root, dir) {
  const cli = join(root, "bin", "slicecheck.js");
  const sc = (...args) =>
    execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8" });
  const durationS = Number(process.env.BENCH_STRESS_S ?? 30);
  // Runs of each row, the rows alternated (a row's figure moves by about 0.5 % from run to run
  // on this machine): the tables show each row's median run.
  const runs = Math.max(1, Number(process.env.BENCH_WORKLOADS_RUNS ?? 1));
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
    const rowsDef = [
      ["1 node, 7 instances", fast, "sim01"],
      ["4 nodes, 28 instances", fast, "all"],
      ["1 node, 7 instances, 0.5 s logins", slow, "all"],
    ];
    const byRow = rowsDef.map(() => []);
    let k = 0;
    for (let r = 0; r < runs; r++)
      for (const [i, def] of rowsDef.entries()) byRow[i].push(measureRow(sc, def, durationS, k++));
    const picked = medianRuns(byRow);
    console.log(
      `harness overhead of \`slicecheck run --suites stress\`: the whole run (Node start-up, connect and lock, instance discovery, the on-node build check, the records, teardown and the reports) and the stress phase alone (its wall time less the longest workload's span on the node); SSH sessions per node from each node's sshd log (every command's login, the utilization sampler's included); ${runs === 1 ? "one run a row" : `each row's median of ${runs} runs (BENCH_WORKLOADS_RUNS), rows alternated`}`,
    );
    console.table(picked.map((p) => p.row));
    console.log(
      "where each run's wall time went (s): start-up is Node's and the CLI's before the run's first task; stress phase is the controller's window over every node's stress (the workloads' own span and the phase overhead); exit is after the last span, until the process ended; the load average as the run ended",
    );
    console.table(picked.map((p) => p.part));
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
