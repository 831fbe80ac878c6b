#!/usr/bin/env node
// `npm run bench`: wall time of `slicecheck exec -- true` on 1, 8 and 32 simulated nodes,
// against a plain `ssh` loop and parallel `ssh` processes (xargs -P) on the same nodes; of the
// isolation suite on 1, 2 and 4 nodes (bench-isolation.mjs); and the others below.
// Prints figures; asserts nothing (timing belongs here, not in tests).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "bin", "slicecheck.js");
const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-"));
const inv = join(dir, "sim.yaml");
const reps = Number(process.env.BENCH_REPS ?? 3);

const sc = (...args) =>
  execFileSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8" });
function time(fn) {
  const runs = [];
  for (let i = 0; i < reps; i++) {
    const t = process.hrtime.bigint();
    fn();
    runs.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  runs.sort((a, b) => a - b);
  return { median: runs[Math.floor(runs.length / 2)], min: runs[0], max: runs[runs.length - 1] };
}

// "planner", "workloads", "isolation", "exec", "transport", "records", "slurm", "rollout" or
// "inventory"; all by default
const only = process.env.BENCH;

/** The planner's enumeration of every layout of a fresh catalogue (`plan` calls it). */
async function benchPlanner() {
  const { builtinCatalog, enumerateCombinations } = await import(
    join(root, "dist", "mig", "planner", "index.js")
  );
  const rows = [];
  for (const [product, driver] of [
    ["A100-40GB", "535.183.01"],
    ["H100-80GB", "580.65.06"],
    ["H200", "580.173.02"],
    ["B200", "580.65.06"],
  ]) {
    const cat = builtinCatalog(product, driver);
    let n = 0;
    const t = time(() => {
      n = enumerateCombinations(cat).length;
    });
    rows.push({ product, driver, combinations: n, "median (ms)": t.median.toFixed(2) });
  }
  console.log(`planner: every combination of a fresh catalogue, median of ${reps} runs`);
  console.table(rows);
}

try {
  if (!only || only === "planner") await benchPlanner();
  if (!only || only === "inventory") (await import("./bench-inventory.mjs")).benchInventory(root);
  if (!only || only === "workloads")
    (await import("./bench-workloads.mjs")).benchWorkloads(root, dir);
  if (!only || only === "isolation") (await import("./bench-isolation.mjs")).benchIsolation(root);
  if (!only || only === "exec") benchExec();
  if (!only || only === "transport")
    await (await import("./bench-transport.mjs")).benchTransport(root);
  // These two need PostgreSQL and Slurm (npm test installs them); without them, say so.
  if (!only || only === "records") {
    if (existsSync("/usr/lib/postgresql"))
      await (await import("./bench-records.mjs")).benchRecords(root);
    else console.log("records: skipped, PostgreSQL is not installed (apt-get install postgresql)");
  }
  if (!only || only === "rollout") {
    if (existsSync("/usr/sbin/slurmctld")) (await import("./bench-rollout.mjs")).benchRollout(root);
    else console.log("rollout: skipped: no slurmctld (npm test installs slurm-wlm)");
  }
  if (!only || only === "slurm") {
    if (existsSync("/usr/sbin/slurmctld")) (await import("./bench-slurm.mjs")).benchSlurm(root);
    else console.log("slurm: skipped, Slurm is not installed (apt-get install slurm-wlm munge)");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function benchExec() {
  try {
    execOnNodes();
  } finally {
    spawnSync(process.execPath, [cli, "sim", "down", "--inventory", inv], { stdio: "ignore" });
  }
}

/** Debian's pdsh and clustershell, installed when missing (they are the users' yardstick). */
function ensureFanoutTools() {
  const have = (c) => spawnSync("sh", ["-c", `command -v ${c}`], { stdio: "ignore" }).status === 0;
  const missing = [
    ["pdsh", "pdsh"],
    ["clush", "clustershell"],
  ].filter(([c]) => !have(c));
  if (missing.length === 0) return true;
  const pkgs = missing.map(([, p]) => p);
  const isRoot = process.getuid?.() === 0;
  const sudo = isRoot ? [] : ["sudo", "-n"];
  console.log(`bench: installing ${pkgs.join(", ")} from Debian (apt-get) to compare with`);
  const apt = (...args) =>
    spawnSync(sudo[0] ?? "apt-get", [...sudo.slice(1), ...(isRoot ? [] : ["apt-get"]), ...args], {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  let r = apt("install", "-y", "--no-install-recommends", ...pkgs);
  if (r.status !== 0) {
    apt("update");
    r = apt("install", "-y", "--no-install-recommends", ...pkgs);
  }
  if (r.status !== 0)
    console.log("bench: could not install them; the pdsh/clush comparison is left out");
  return r.status === 0;
}

/** `slicecheck exec -- true` against pdsh and clush on the same 32 nodes, all three through
 * OpenSSH's configuration for the nodes, alternated in one run so load hits all alike. */
function fanoutRatios(status, key, kh) {
  if (!ensureFanoutTools()) return;
  const cfg = join(dir, "ssh_config");
  writeFileSync(
    cfg,
    status
      .map(
        (n) =>
          `Host ${n.name}\n  HostName ${n.host}\n  Port ${n.port}\n  User ${process.env.USER ?? "root"}\n  IdentityFile ${key}\n  UserKnownHostsFile ${kh}\n  StrictHostKeyChecking yes\n  BatchMode yes\n`,
      )
      .join(""),
  );
  const names = status.map((n) => n.name);
  const range = names.join(",");
  const env = { ...process.env, PDSH_SSH_ARGS_APPEND: `-F ${cfg}`, PDSH_RCMD_TYPE: "ssh" };
  const run = (file, args) => {
    const t = process.hrtime.bigint();
    const r = spawnSync(file, args, { cwd: root, env, stdio: "ignore" });
    if (r.status !== 0) throw new Error(`${file} exited ${r.status}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const times = { slicecheck: [], pdsh: [], clush: [] };
  for (let i = 0; i < Math.max(reps, 5); i++) {
    times.slicecheck.push(run(process.execPath, [cli, "exec", "-i", inv, "--", "true"]));
    times.pdsh.push(run("pdsh", ["-R", "ssh", "-f", "64", "-w", range, "true"]));
    times.clush.push(run("clush", ["-f", "64", "-o", `-F ${cfg}`, "-w", range, "true"]));
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(med(v))]));
  console.log(
    `exec -- true on ${names.length} nodes, alternated ${times.pdsh.length} times (median ms):`,
    m,
  );
  console.log(
    `slicecheck / pdsh = ${(m.slicecheck / m.pdsh).toFixed(2)}x, slicecheck / clush = ${(m.slicecheck / m.clush).toFixed(2)}x`,
  );
}

function execOnNodes() {
  const t0 = Date.now();
  sc("sim", "up", "--nodes", "32", "--inventory", inv);
  console.log(`sim up, 32 nodes: ${Date.now() - t0} ms`);
  const status = JSON.parse(sc("sim", "status", "--inventory", inv, "--json")).nodes;
  const key = join(dir, ".sim.d", "id_ed25519");
  const kh = join(dir, ".sim.d", "known_hosts");
  const sshArgs = (n) => [
    "-i",
    key,
    "-o",
    `UserKnownHostsFile=${kh}`,
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "BatchMode=yes",
    "-p",
    String(n.port),
    `${process.env.USER ?? "root"}@${n.host}`,
    "true",
  ];
  const rows = [];
  for (const count of [1, 8, 32]) {
    const nodes = status.slice(0, count);
    const sel = nodes.map((n) => n.name).join(",");
    const ours = time(() => sc("exec", "-i", inv, "--nodes", sel, "--", "true"));
    const loop = time(() => {
      for (const n of nodes) execFileSync("ssh", sshArgs(n), { stdio: "ignore" });
    });
    const list = join(dir, `targets-${count}`);
    writeFileSync(list, nodes.map((n) => sshArgs(n).join(" ")).join("\n"));
    const par = time(() => {
      const r = spawnSync("sh", ["-c", `xargs -P 32 -L 1 ssh < ${list}`], { stdio: "ignore" });
      if (r.status !== 0) throw new Error("xargs ssh failed");
    });
    rows.push({
      nodes: count,
      "slicecheck exec (ms)": ours.median,
      "ssh loop (ms)": loop.median,
      "xargs -P ssh (ms)": par.median,
    });
  }
  console.log(
    `median of ${reps} runs each; slicecheck includes its Node start-up (one channel per node: the watchdog shares it)`,
  );
  fanoutRatios(status, key, kh);
  console.table(
    rows.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [
          k,
          typeof v === "number" && k !== "nodes" ? Math.round(v) : v,
        ]),
      ),
    ),
  );
}
