// `BENCH=workloads npm run bench`: harness overhead of a stress (BENCH_STRESS_S, default 30 s)
// on 7 MIG instances of one node, on 4 nodes (28), and on one node whose logins are slow (every
// login shell first sleeps 0.5 s, as a real node's start-up files make it: `sim up
// --login-delay`). Per row, besides the whole run's overhead: the SSH sessions each node's sshd
// opened for the run (its own log, LogLevel VERBOSE: one `Starting session: command` line per
// channel), and the stress phase's overhead: its wall time on the controller less the longest
// workload's own span on the node (its end record, `nodeElapsedS` in `--json`); then where each
// run's seconds went (its `tasks` spans in `--json`), and where the machine's CPU went: the
// controller's own CPU time, the whole machine's, and how busy the machine was in the stress
// phase's first half second, when every node launches its workloads; last, the floor of the
// first two rows: the same node-side work with no harness (bench-floor.mjs). Prints figures;
// asserts nothing.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { measureFloor } from "./bench-floor.mjs";

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

/** Every workload's stress step (controller clock), over every node. */
function stressSteps(summary) {
  return summary.checks
    .filter((c) => c.suite === "stress")
    .flatMap((c) => c.steps.filter((x) => x.name === "stress"));
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
  const steps = stressSteps(summary);
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

/** The machine's busy and total CPU time so far, in clock ticks (/proc/stat's first line:
 * everything but idle and iowait is busy). */
function machineTicks() {
  const f = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const total = f.reduce((a, x) => a + x, 0);
  return { busy: total - f[3] - f[4], total };
}

const TICK_S = 0.01; // USER_HZ, 100 on Linux

/**
 * Runs the CLI as a child and answers its stdout, its own CPU time in seconds, and the machine's
 * CPU readings every 50 ms while it ran (epoch ms, busy and total ticks). Its CPU time is read by
 * the shell that waited for it (/proc/self/stat's cutime and cstime, a builtin read in that
 * shell), since Node gives no rusage of a child.
 */
function runSampled(root, cli, args) {
  const samples = [];
  const take = () => samples.push({ ms: Date.now(), ...machineTicks() });
  take();
  const timer = setInterval(take, 50);
  const script = '"$@" >&3; rc=$?; read -r l < /proc/self/stat; printf "%s\\n" "$l"; exit $rc';
  const child = spawn("sh", ["-c", script, "sh", process.execPath, cli, ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit", "pipe"],
  });
  const text = (stream) => {
    let out = "";
    stream.setEncoding("utf8").on("data", (d) => {
      out += d;
    });
    return () => out;
  };
  const stat = text(child.stdout);
  const json = text(child.stdio[3]);
  return new Promise((resolve, reject) => {
    child.on("close", (code) => {
      clearInterval(timer);
      take();
      if (code !== 0) return reject(new Error(`slicecheck ${args.join(" ")} exited ${code}`));
      const f = stat()
        .slice(stat().lastIndexOf(")") + 2)
        .split(" ")
        .map(Number);
      resolve({ json: json(), cpuS: (f[13] + f[14]) * TICK_S, samples });
    });
  });
}

/** The machine's busy share (%) and busy CPU seconds between two epoch times, from the readings
 * nearest outside them. */
function busyBetween(samples, fromMs, toMs) {
  const a = samples.filter((x) => x.ms <= fromMs).at(-1) ?? samples[0];
  const b = samples.find((x) => x.ms >= toMs) ?? samples.at(-1);
  const total = b.total - a.total;
  return {
    pct: total ? ((b.busy - a.busy) / total) * 100 : Number.NaN,
    s: (b.busy - a.busy) * TICK_S,
  };
}

/** One run of one row: its table row and its breakdown. `k` numbers its output folder. */
async function measureRow(root, cli, [label, inv, sel], durationS, k) {
  const before = sessions(inv);
  const t = process.hrtime.bigint();
  const out = join(dirname(inv), `wl-${sel}-${k}`);
  const ran = await runSampled(root, cli, [
    ...["run", "-i", inv, "--nodes", sel, "--duration", String(durationS), "--out", out],
    ...["--db", join(dirname(inv), "bench.db"), "--json"],
  ]);
  const wall = Number(process.hrtime.bigint() - t) / 1e9;
  const s = JSON.parse(ran.json);
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
  const phaseFrom = Math.min(...stressSteps(s).map((x) => x.startMs));
  const launch = busyBetween(ran.samples, phaseFrom, phaseFrom + 500);
  const machine = busyBetween(ran.samples, 0, Number.POSITIVE_INFINITY);
  return {
    lessLongest,
    part: { run: label, ...breakdownS(s, wall), "load (1 min)": load },
    cpu: {
      run: label,
      "controller CPU (s)": ran.cpuS.toFixed(2),
      "machine busy CPU (s)": machine.s.toFixed(2),
      "of which not the controller (s)": (machine.s - ran.cpuS).toFixed(2),
      "machine busy, phase's first 0.5 s (%)": launch.pct.toFixed(0),
    },
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

/** The floor's table: per row, its median run against the harness's median. */
function floorRows(defs, floors, picked, durationS) {
  return defs.map(([label], i) => {
    const runs = floors[i].map((f) => f.wall - f.longest).sort((a, b) => a - b);
    const over = runs[Math.floor((runs.length - 1) / 2)];
    const harness = picked[i].lessLongest;
    return {
      run: label,
      "workloads run": floors[i].map((f) => f.workloads).join(", "),
      "floor, less longest (s)": over.toFixed(2),
      "floor, less longest (%)": ((over / durationS) * 100).toFixed(1),
      "floor's runs (%)": floors[i]
        .map((f) => (((f.wall - f.longest) / durationS) * 100).toFixed(1))
        .join(", "),
      "harness, less longest (%)": harness.toFixed(1),
      "harness above the floor (s)": ((harness / 100) * durationS - over).toFixed(2),
    };
  });
}

/** Node's own start-up (`node -e 0`), median of 7, in ms, with `env`. */
function nodeStartMs(env) {
  const ms = [];
  for (let i = 0; i < 7; i++) {
    const t = process.hrtime.bigint();
    spawnSync(process.execPath, ["-e", "0"], { env, stdio: "ignore" });
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return ms.sort((a, b) => a - b)[3];
}

/** Where NODE_EXTRA_CA_CERTS is set (a build machine's registry proxy), what it costs every Node
 * start: Node 20 reads the bundle before any code runs, so the CLI cannot avoid it; the rows
 * above include it in their start-up. */
function caCertsLine() {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (!file) return null;
  const { NODE_EXTRA_CA_CERTS: _, ...without } = process.env;
  const a = nodeStartMs(process.env);
  const b = nodeStartMs(without);
  return `Node's own start-up here (node -e 0, median of 7): ${a.toFixed(0)} ms with NODE_EXTRA_CA_CERTS=${file} as this machine sets it, ${b.toFixed(0)} ms without: ${(a - b).toFixed(0)} ms of every row's start-up above is that file, read by Node before any of slicecheck's code runs`;
}

export async function benchWorkloads(root, dir) {
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
    // The floor of the rows on the fast cluster, alternated with them (bench-floor.mjs).
    const floorDefs = rowsDef.slice(0, 2);
    const floors = floorDefs.map(() => []);
    let k = 0;
    for (let r = 0; r < runs; r++) {
      for (const [i, def] of rowsDef.entries())
        byRow[i].push(await measureRow(root, cli, def, durationS, k++));
      for (const [i, [, inv, sel]] of floorDefs.entries())
        floors[i].push(await measureFloor(root, inv, sel, durationS));
    }
    const picked = medianRuns(byRow);
    console.log(
      `harness overhead of \`slicecheck run --suites stress\`: the whole run (Node start-up, connect and lock, instance discovery, the on-node build check, the records, teardown and the reports) and the stress phase alone (its wall time less the longest workload's span on the node); SSH sessions per node from each node's sshd log (every command's login, the utilization sampler's included); ${runs === 1 ? "one run a row" : `each row's median of ${runs} runs (BENCH_WORKLOADS_RUNS), rows alternated`}`,
    );
    console.table(picked.map((p) => p.row));
    console.log(
      "where each run's wall time went (s): start-up is Node's and the CLI's before the run's first task; stress phase is the controller's window over every node's stress (the workloads' own span and the phase overhead); exit is after the last span, until the process ended; the load average as the run ended",
    );
    console.table(picked.map((p) => p.part));
    console.log(
      "where the machine's CPU went in each of those runs: the controller's own CPU time; the whole machine's busy CPU time from /proc/stat (the simulated nodes' sshd, shells, workloads and resident simulator, the controller, and anything else running); and how busy both cores were in the stress phase's first 0.5 s (the controller's clock), while every node launched its workloads",
    );
    console.table(picked.map((p) => p.cpu));
    console.log(
      `the floor: the same node-side work with no harness (scripts/bench-floor.mjs): one OpenSSH \`ssh\` per node runs discovery's and the catalogue's reads and the build probe side by side, then every instance's stress at once, and waits; no lock, deadline, recorder, sampler, records or reports, no Node. Its wall time less its longest workload (bash's EPOCHREALTIME around each, as the recorder takes it) is what the simulated nodes' sshd, tools and workloads cost on this machine's cores, which no controller here can go below; ${runs === 1 ? "one run" : `medians of ${runs} runs`}, alternated with the rows above`,
    );
    console.table(floorRows(floorDefs, floors, picked, durationS));
    const ca = caCertsLine();
    if (ca) console.log(ca);
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
