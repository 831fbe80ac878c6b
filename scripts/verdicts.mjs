#!/usr/bin/env node
// `npm run verdicts`: how far the isolation verdicts can be trusted, on the simulator, with this
// machine loaded. 20 healthy isolation runs while two CPU hogs (busy `node -e` loops, bounded,
// killed at the end) load the control machine, then 20 runs with a planted fault (cycling
// isolation-broken, xid-misattributed, hang). Prints the false-failure rate (a healthy run with
// a failed isolation verdict), the detection rate (a planted fault run with one), the broken
// counts and the load. A script, not a test: it measures, it asserts nothing.
//   VERDICT_RUNS=20 (each half), VERDICT_HOGS=2, VERDICT_DURATION=1
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "bin", "slicecheck.js");
const dir = mkdtempSync(join(tmpdir(), "slicecheck-verdicts-"));
const inv = join(dir, "sim.yaml");
const runs = Number(process.env.VERDICT_RUNS ?? 20);
const hogCount = Number(process.env.VERDICT_HOGS ?? 2);
const duration = process.env.VERDICT_DURATION ?? "1";
const PLANTED = ["isolation-broken", "xid-misattributed", "hang"];

function sc(...args) {
  const r = spawnSync(process.execPath, [cli, ...args], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status ?? 2, stdout: r.stdout, stderr: r.stderr };
}
function must(...args) {
  const r = sc(...args);
  if (r.code !== 0) throw new Error(`slicecheck ${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
  return r;
}

// Each hog busy-loops until killed, and in any case stops by itself after an hour, so that a
// script killed with SIGKILL leaves nothing spinning for long.
const hogs = [];
function startHogs() {
  for (let i = 0; i < hogCount; i++)
    hogs.push(
      spawn(
        process.execPath,
        ["-e", "const end=Date.now()+3600e3;for(;;){if(Date.now()>end)break}"],
        {
          stdio: "ignore",
        },
      ),
    );
}
function stopHogs() {
  for (const h of hogs) if (h.exitCode === null) h.kill("SIGKILL");
}
for (const sig of ["SIGINT", "SIGTERM"])
  process.on(sig, () => {
    stopHogs();
    process.exit(130);
  });

/** One isolation run: its exit code and its isolation checks' statuses. */
function isolationRun(name, fault) {
  const out = join(dir, name);
  const r = sc(
    "run",
    "-i",
    inv,
    "--suites",
    "isolation",
    "--faults",
    fault,
    "--duration",
    duration,
    "--aggressors",
    "1",
    "--out",
    out,
    "--no-allure",
    "--json",
  );
  let checks = [];
  try {
    checks = JSON.parse(r.stdout).checks.filter((c) => c.suite === "isolation");
  } catch {
    // No JSON: the run itself broke; counted as broken below.
  }
  const failed = checks.filter((c) => c.status === "failed");
  const broken = checks.filter((c) => c.status === "broken");
  return { code: r.code, failed, broken, none: checks.length === 0 };
}

// Sampled after each run: the runs are synchronous, so a timer would never fire.
const samples = [];
const t0 = Date.now();
try {
  must("sim", "up", "--nodes", "1", "--gpu", "H100-80GB", "--inventory", inv);
  must(
    "apply",
    "-i",
    inv,
    "test/fixtures/isolation-layout.yaml",
    "-c",
    "two-3g",
    "--journal-dir",
    join(dir, "journal"),
  );
  startHogs();
  let falseFailures = 0;
  let healthyBroken = 0;
  const why = [];
  for (let i = 0; i < runs; i++) {
    const fault = i % 2 === 0 ? "crash" : "oom";
    const r = isolationRun(`healthy-${i}`, fault);
    if (r.failed.length > 0) {
      falseFailures++;
      why.push(`healthy ${i} (${fault}): ${r.failed.map((c) => c.message).join(" | ")}`);
    }
    if (r.broken.length > 0 || r.none) {
      healthyBroken++;
      why.push(
        `healthy ${i} (${fault}) broken: ${r.broken.map((c) => c.message)[0] ?? "no checks"}`,
      );
    }
    samples.push(loadavg()[0]);
    process.stderr.write(`healthy ${i + 1}/${runs}: exit ${r.code}\n`);
  }
  let detected = 0;
  let plantedBroken = 0;
  const missed = [];
  for (let i = 0; i < runs; i++) {
    const kind = PLANTED[i % PLANTED.length];
    const fault = kind === "isolation-broken" && i % 2 === 1 ? "oom" : "crash";
    must("sim", "fault", "sim01", kind, "--inventory", inv);
    const r = isolationRun(`planted-${i}`, fault);
    must("sim", "fault", "sim01", "--clear", "--inventory", inv);
    if (r.failed.length > 0) detected++;
    else missed.push(`${kind} (${fault}): exit ${r.code}, ${r.broken.length} broken`);
    if (r.broken.length > 0) plantedBroken++;
    samples.push(loadavg()[0]);
    process.stderr.write(`planted ${i + 1}/${runs} ${kind}: exit ${r.code}\n`);
  }
  const avg = samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : loadavg()[0];
  const pct = (n) => `${((100 * n) / runs).toFixed(0)} %`;
  console.log(
    `load: ${hogCount} CPU hog(s) (busy node -e loops) on ${cpus().length} core(s); 1-min load average ${avg.toFixed(2)} after each run (max ${Math.max(...samples, 0).toFixed(2)}); runs of --duration ${duration} --aggressors 1`,
  );
  console.log(
    `healthy: ${falseFailures}/${runs} false failed verdict(s) (false-failure rate ${pct(falseFailures)}); ${healthyBroken}/${runs} run(s) with a broken verdict`,
  );
  console.log(
    `planted (${PLANTED.join(", ")}): ${detected}/${runs} caught (detection rate ${pct(detected)}); ${plantedBroken} with a broken verdict`,
  );
  for (const w of why) console.log(`  ${w}`);
  for (const m of missed) console.log(`  missed: ${m}`);
  console.log(`wall time: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exitCode = 0;
} finally {
  stopHogs();
  sc("sim", "down", "--inventory", inv);
  rmSync(dir, { recursive: true, force: true });
}
