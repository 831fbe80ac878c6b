#!/usr/bin/env node
// npm test's runner. The unit tests run first, in four mocha workers: they are quick, so a broken
// build or parser fails in about a minute and a half (88 s for the group on 2 cores, 97 % busy,
// against 102 s and 79 % busy with two workers, 6 December 2026: much of it waits on the real
// shells and tools the tests start, nvcc among them). Then the
// end-to-end tests (those that start real sshd, Slurm, PostgreSQL or Chromium) run in parallel
// mocha workers, one file per worker; each file starts its own cluster in its own temporary
// folder on free ports, so files do not share state. On 2 cores that group is CPU-bound: with 3
// workers it was 82 % busy (15 min 6 s, 5 December 2026), with 4 it is 94 % busy and a minute
// sooner (14 min 1 s, 373 passing; the second clean run at 4 after one of 16 min 41 s).
// SLICECHECK_TEST_BESIDE=1 runs the two groups side by side (about 45 s sooner on 2 cores; a
// failing unit group then stops the end-to-end workers). It is not the default: on 2 cores the
// unit group's CPU beside the first end-to-end files disturbed their runs (a broken stress in
// the lifecycle test, a lease test's journal) in the merged run of 2026-12-03.
//
//   node scripts/test.mjs [unit|e2e|all] [--list] [mocha options...]
//
// A file is end-to-end when its source uses one of the helpers or modules that start real
// daemons (E2E below); the split is made from the files themselves, so a new test file needs
// no list to be run, and every *.test.ts under test/ and sim/test/ runs in exactly one of the
// two groups.
// SLICECHECK_TEST_JOBS sets the number of end-to-end workers (default 4; 1 runs them serially),
// SLICECHECK_TEST_UNIT_JOBS the unit group's (default 4; 1 runs it in one process).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** What only an end-to-end test uses: a simulated cluster (real sshd), real Slurm or
 * PostgreSQL (or slurmdbd), Chromium, the demo, or the CLI as a separate process. */
export const E2E =
  /helpers\/(cluster|slurm-cluster|slurmdbd|postgres|cli-entry)\.js|(sim|src)\/(cluster|postgres)\.js|playwright|chromium|scripts\/demo|"sim", "up"|dist\/cli|bin\/slicecheck/;

/** The end-to-end files that take longest, longest first (measured with `npm run test:times` on
 * 2 loaded cores, 4 December 2026: the seconds each took, hooks included), started first so that
 * no long file begins last while the other workers sit idle. Only an order: a file missing here
 * still runs, and a name here that no longer exists is ignored. */
const SLOW_FIRST = [
  "test/report/signoff.test.ts", // 457 s
  "test/demo.test.ts", // 456 s
  "test/harness/via-slurm.test.ts", // 384 s
  "test/harness/lifecycle.test.ts", // 372 s
  "test/chaos/isolation.test.ts", // 340 s
  "test/suites/containers.test.ts", // 319 s
  "test/suites/slurm.test.ts", // 239 s
  "test/suites/slurm-parallel.test.ts", // 238 s
  "test/harness/slurm-drain.test.ts", // 232 s
  "test/chaos/latency.test.ts", // 209 s
  "test/cli/run-progress.test.ts", // 201 s
  "test/chaos/vgpu-guest.test.ts", // 196 s
  "test/chaos/soft-partitioning.test.ts", // 177 s
  "test/cli/cdi.test.ts", // 171 s
  "test/report/report.test.ts", // 158 s
  "test/chaos/parallel-nodes.test.ts", // 137 s
  "test/harness/lease.test.ts", // 131 s
  "test/harness/stalls.test.ts", // 130 s
  "test/cli/apply.test.ts", // 129 s
  "test/report/counts.test.ts", // 127 s
  "test/suites/training.test.ts", // 111 s
  "test/cli/doctor-ready.test.ts", // 105 s
  "test/report/suites-extra.test.ts", // 102 s
  "test/harness/suites.test.ts", // 101 s
  "test/harness/via-slurm-constrain.test.ts", // 97 s
  "test/cli/rollout.test.ts", // 96 s
];

/** Where the tests are: the product's, and the simulator package's own. */
export const TEST_DIRS = ["test", "sim/test"];

/** Every test file under `dirs`, as paths relative to the repository root, sorted. */
export function testFiles(dirs = TEST_DIRS.map((d) => join(root, d))) {
  const out = [];
  for (const dir of dirs)
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) out.push(...testFiles([p]));
      else if (e.name.endsWith(".test.ts")) out.push(relative(root, p));
    }
  return out.sort();
}

/** The files split into the two groups. */
export function groups(files = testFiles()) {
  const e2e = files.filter((f) => E2E.test(readFileSync(resolve(root, f), "utf8")));
  const rank = (f) => (SLOW_FIRST.includes(f) ? SLOW_FIRST.indexOf(f) : SLOW_FIRST.length);
  return {
    unit: files.filter((f) => !e2e.includes(f)),
    e2e: e2e
      .map((f, i) => [rank(f), i, f])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1])
      .map((x) => x[2]),
  };
}

const MOCHA = join(root, "node_modules", "mocha", "bin", "mocha.js");

function mocha(files, args) {
  if (files.length === 0) return 0;
  const r = spawnSync(process.execPath, [MOCHA, ...args, ...files], {
    stdio: "inherit",
    cwd: root,
  });
  return r.status ?? 1;
}

/** Both groups at once: the end-to-end files mostly wait on daemons and workload durations, so
 * the unit files' CPU minute fits beside them rather than before them. The unit output is held
 * and printed whole when that group ends (two spec reporters would interleave line by line); a
 * failing unit group stops the end-to-end workers, so a broken build still fails in a minute. */
export function bothGroups(g, args, parallel, jobs, quiet = false) {
  const say = quiet ? () => {} : (s) => process.stdout.write(`${s}\n`);
  say(`[test] ${g.unit.length} unit test files, beside the end-to-end files`);
  say(`[test] ${g.e2e.length} end-to-end test files, ${jobs} at a time`);
  // Its own process group, so that stopping it stops its workers too.
  const e2e = spawn(process.execPath, [MOCHA, ...parallel, ...args, ...g.e2e], {
    // No terminal input: a process group of its own must not read the terminal (SIGTTIN).
    stdio: quiet ? "ignore" : ["ignore", "inherit", "inherit"],
    cwd: root,
    detached: true,
  });
  const e2eDone = new Promise((done) => e2e.on("close", (code) => done(code ?? 1)));
  // Held in a pipe, so told to keep the colours it would give the terminal.
  const colour = !quiet && process.stdout.isTTY ? ["--color"] : [];
  const unit = spawn(process.execPath, [MOCHA, ...colour, ...args, ...g.unit], {
    stdio: ["ignore", "pipe", "pipe"],
    cwd: root,
  });
  const held = [];
  unit.stdout.on("data", (d) => held.push(d));
  unit.stderr.on("data", (d) => held.push(d));
  // SIGINT to its process group, as a Ctrl-C at the terminal reaches it when it runs alone: the
  // same stop as a user's, and a Ctrl-C here (its group is not the terminal's) is passed on.
  const stop = () => {
    try {
      process.kill(-e2e.pid, "SIGINT");
    } catch {
      /* already gone */
    }
  };
  process.once("SIGINT", stop);
  return new Promise((done) =>
    unit.on("close", async (code) => {
      say(`\n[test] unit test files:\n${Buffer.concat(held)}`);
      if (code !== 0) {
        say("[test] the unit tests failed: stopping the end-to-end tests");
        stop();
        await e2eDone;
        return done(code ?? 1);
      }
      done(await e2eDone);
    }),
  );
}

async function main(argv) {
  const which = ["unit", "e2e", "all"].includes(argv[0]) ? argv.shift() : "all";
  const g = groups();
  if (argv.includes("--list")) {
    for (const f of which === "all" ? [...g.unit, ...g.e2e] : g[which]) console.log(f);
    return 0;
  }
  // The tests reach only loopback addresses and never TLS; Node 20 reads this variable's CA
  // bundle at every start, before any code runs (85 ms each where it names the 144 certificates
  // of Debian's bundle, as some build machines set it for their registry proxy): every CLI and
  // simulated tool a test starts paid it (test/cli/exec.test.ts: 4.2 -> 3.2 s of CPU).
  delete process.env.NODE_EXTRA_CA_CERTS;
  const jobs = Number(process.env.SLICECHECK_TEST_JOBS ?? 4);
  const parallel = jobs > 1 ? ["--parallel", "--jobs", String(jobs)] : [];
  const unitJobs = Number(process.env.SLICECHECK_TEST_UNIT_JOBS ?? 4);
  const unitParallel = unitJobs > 1 ? ["--parallel", "--jobs", String(unitJobs)] : [];
  // Measured runs (`npm run test:times`) keep the groups apart, so their figures compare.
  if (
    which === "all" &&
    !process.env.SLICECHECK_TEST_TIMES &&
    process.env.SLICECHECK_TEST_BESIDE === "1"
  )
    return bothGroups(g, argv, parallel, Math.max(jobs, 1));
  if (which !== "e2e") {
    console.log(`[test] ${g.unit.length} unit test files, ${Math.max(unitJobs, 1)} at a time`);
    const code = timed("unit", () => mocha(g.unit, [...unitParallel, ...argv]));
    if (code !== 0 || which === "unit") return code;
  }
  console.log(`[test] ${g.e2e.length} end-to-end test files, ${Math.max(jobs, 1)} at a time`);
  return timed("end-to-end", () => mocha(g.e2e, [...parallel, ...argv]));
}

/** Runs a group, then says its wall time and how busy the machine's cores were meanwhile (from
 * /proc/stat where there is one): a CI log then shows where npm test's minutes went. */
function timed(name, fn) {
  const cpu = () => {
    try {
      const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1);
      const n = f.map(Number);
      return { busy: n[0] + n[1] + n[2] + n[5] + n[6], all: n.reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  const t0 = Date.now();
  const c0 = cpu();
  const code = fn();
  const c1 = cpu();
  const s = ((Date.now() - t0) / 1000).toFixed(0);
  const busy =
    c0 && c1 && c1.all > c0.all
      ? `, ${(((c1.busy - c0.busy) / (c1.all - c0.all)) * 100).toFixed(0)} % of the cores busy`
      : "";
  console.log(`[test] ${name} group: ${s} s${busy}`);
  return code;
}

/** The evidence the failed tests left (test/helpers/evidence.ts), printed after mocha's summary
 * so that a log cut to its tail keeps it: the first `max` lines, the first failure's first. */
function printEvidence(file, max = 150) {
  if (!existsSync(file)) return;
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  rmSync(file, { force: true });
  if (!lines.join("")) return;
  const more =
    lines.length > max ? `\n[test] … ${lines.length - max} more lines in the log above` : "";
  console.log(`\n[test] evidence the failed tests left:\n${lines.slice(0, max).join("\n")}${more}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const evidence = join(tmpdir(), `slicecheck-test-evidence-${process.pid}.log`);
  process.env.SLICECHECK_TEST_EVIDENCE = evidence;
  const code = await main(process.argv.slice(2));
  printEvidence(evidence);
  process.exit(code);
}
