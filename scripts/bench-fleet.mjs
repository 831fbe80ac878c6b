// `BENCH=fleet npm run bench`: issue 25's 64-node row, `run --suites stress --duration 30` on 64
// simulated nodes (H100-80GB, one GPU each) with the harness overhead and the controller's peak
// RSS. Every simulated workload is a process on this machine (a bash client and two cats, its
// program running in the cluster's resident simulator; a Node process of its own without one),
// beside its sshd session and login shell: 64 x 7 of them may not fit in its memory with others
// working, so one node's 7 instances are measured first (the resident's RSS counted with them)
// and the row runs the most instances per node that fit in half of what is available (7, 3, 2 or
// 1: the all-1g/2g/3g/7g layouts), saying why when fewer than 7.
// Not part of the default `npm run bench`: minutes on 2 cores. Prints figures, asserts nothing.
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const NODES = Number(process.env.BENCH_FLEET_NODES ?? 64);
const DURATION_S = Number(process.env.BENCH_STRESS_S ?? 30);
/** Instances per H100-80GB and the layout (fixtures/layouts/default.yaml) that makes them. */
const LAYOUTS = [
  [7, "all-1g.10gb"],
  [3, "all-2g.20gb"],
  [2, "all-3g.40gb"],
  [1, "all-7g.80gb"],
];

const kib = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
  } catch {
    return 0;
  }
};

/** Every process under `roots` (a node's sshd: its sessions, shells and workloads). */
function descendants(roots) {
  const kids = new Map();
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = readFileSync(`/proc/${e}/stat`, "utf8");
      const ppid = Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]);
      kids.set(ppid, [...(kids.get(ppid) ?? []), Number(e)]);
    } catch {
      /* gone */
    }
  }
  const out = [];
  const todo = [...roots];
  while (todo.length) {
    const kidsOf = kids.get(todo.pop()) ?? [];
    out.push(...kidsOf);
    todo.push(...kidsOf);
  }
  return out;
}

/** Runs `slicecheck run` to its end, sampling every 250 ms the RSS of what the nodes' sshd
 * run and of the cluster's resident simulator (summed) and the controller's own peak (VmHWM). */
async function sampledRun(cli, root, args, sshdPids, residentPid) {
  const t = process.hrtime.bigint();
  const child = spawn(process.execPath, [cli, ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  let nodeSide = 0;
  let hwm = 0;
  const timer = setInterval(() => {
    nodeSide = Math.max(
      nodeSide,
      descendants(sshdPids).reduce((s, p) => s + kib(p), kib(residentPid)),
    );
    try {
      const st = readFileSync(`/proc/${child.pid}/status`, "utf8");
      hwm = Math.max(hwm, Number(st.match(/VmHWM:\s+(\d+)/)?.[1] ?? 0));
    } catch {
      /* ended */
    }
  }, 250);
  const code = await new Promise((r) => child.on("close", r));
  clearInterval(timer);
  const wall = Number(process.hrtime.bigint() - t) / 1e9;
  return { code, wall, nodeSideKiB: nodeSide, controllerKiB: hwm, summary: JSON.parse(out) };
}

export async function benchFleet(root, dir) {
  const cli = join(root, "bin", "slicecheck.js");
  const sc = (...a) => spawnSync(process.execPath, [cli, ...a], { cwd: root, encoding: "utf8" });
  const must = (...a) => {
    const r = sc(...a);
    if (r.status !== 0) throw new Error(`slicecheck ${a.slice(0, 2).join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const inv = join(dir, "fleet.yaml");
  const journal = join(dir, "fleet-journal");
  const sshdPids = () =>
    JSON.parse(must("sim", "status", "--inventory", inv, "--json")).nodes.map((n) => n.pid);
  // The cluster's folder beside its inventory (sim/src/cluster.ts clusterDirFor).
  const residentPid = () => {
    try {
      return Number(readFileSync(join(dir, ".fleet.d", "resident.pid"), "utf8"));
    } catch {
      return 0;
    }
  };
  const up = (n, layout) => {
    must("sim", "up", "--nodes", String(n), "--gpu", "H100-80GB", "--inventory", inv);
    const t = Date.now();
    must(
      "apply",
      "-i",
      inv,
      "fixtures/layouts/default.yaml",
      "-c",
      layout,
      "--journal-dir",
      journal,
    );
    return (Date.now() - t) / 1000;
  };
  const run = (tag, seconds = DURATION_S) => [
    "run",
    "-i",
    inv,
    "--suites",
    "stress",
    "--duration",
    String(seconds),
    "--out",
    join(dir, `fleet-${tag}`),
    "--db",
    join(dir, "fleet.db"),
    "--json",
  ];
  const down = () => {
    sc("restore", "-i", inv, "--journal-dir", journal);
    sc("sim", "down", "--inventory", inv);
  };
  try {
    // One node's 7 instances, 10 s: what one simulated workload costs on the node side.
    up(1, "all-1g.10gb");
    const probe = await sampledRun(cli, root, run("probe", 10), sshdPids(), residentPid());
    const perMiB = probe.nodeSideKiB / 7 / 1024;
    down();
    const availMiB =
      Number(readFileSync("/proc/meminfo", "utf8").match(/MemAvailable:\s+(\d+)/)[1]) / 1024;
    const budget = availMiB / 2;
    const [k, layout] = LAYOUTS.find(([n]) => NODES * n * perMiB <= budget) ?? LAYOUTS[3];
    const why =
      k === 7
        ? `${NODES} x 7 fits`
        : `${NODES} x 7 = ${NODES * 7} workloads x ${perMiB.toFixed(0)} MiB = ${((NODES * 7 * perMiB) / 1024).toFixed(1)} GiB would not fit in half of the ${(availMiB / 1024).toFixed(1)} GiB available (others work on this machine): ${NODES} x ${k} instead`;
    console.log(
      `fleet: one simulated workload with its sshd session and shell: ${perMiB.toFixed(1)} MiB RSS (node-side peak of 1 node x 7, / 7); ${why}`,
    );
    const applyS = up(NODES, layout);
    const r = await sampledRun(cli, root, run("fleet"), sshdPids(), residentPid());
    const passed = r.summary.checks.filter((c) => c.suite === "stress" && c.status === "passed");
    console.log(
      `fleet: run --suites stress --duration ${DURATION_S} (2 cores shared with other work)`,
    );
    console.table([
      {
        nodes: NODES,
        "instances/node": k,
        workloads: NODES * k,
        "apply (s)": applyS.toFixed(1),
        "wall (s)": r.wall.toFixed(2),
        "overhead (s)": (r.wall - DURATION_S).toFixed(2),
        "overhead (%)": (((r.wall - DURATION_S) / DURATION_S) * 100).toFixed(1),
        "controller peak RSS (MiB)": (r.controllerKiB / 1024).toFixed(1),
        "node-side peak RSS (GiB)": (r.nodeSideKiB / 1024 / 1024).toFixed(2),
        "stress passed": `${passed.length}/${NODES * k}`,
        exit: r.code,
      },
    ]);
    // What did not pass, by code: on 2 shared cores, hundreds of simulated workloads starve
    // each other of CPU, and the simulated stress measures the throughput it got.
    const notPassed = r.summary.checks.filter((c) => c.status !== "passed");
    const byCode = new Map();
    for (const c of notPassed) {
      const key = `${c.status} ${c.code ?? ""}`.trim();
      byCode.set(key, [...(byCode.get(key) ?? []), c]);
    }
    for (const [code, cs] of byCode)
      console.log(`fleet: ${cs.length} ${code}, e.g. ${cs[0].node}: ${cs[0].message ?? ""}`);
  } finally {
    down();
  }
}
