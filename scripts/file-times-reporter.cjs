// A mocha reporter: the usual spec output, then each test file's wall and CPU time (slowest
// first), so that a slow suite can be measured rather than guessed at. CPU is this process's
// own plus that of the children it has waited for (the CLI's subprocesses), not the sshd,
// slurmctld or postgres daemons the tests start. With SLICECHECK_TEST_TIMES=FILE the table is
// also appended to FILE as tab-separated lines (file, wall s, cpu s, tests).
// In parallel mode a file's events arrive only once it has finished, so there the workers time
// their files (scripts/file-times-hooks.mjs, into the same FILE) and this prints what they wrote.
// Used by `npm run test:times`; mocha loads reporters with require(), hence CommonJS.
const { appendFileSync, existsSync, readFileSync, statSync } = require("node:fs");
const { loadavg } = require("node:os");
const { relative } = require("node:path");
const { Runner, reporters } = require("mocha");
const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_TEST_END, EVENT_RUN_END } = Runner.constants;

/** CPU seconds of this process and its waited-for children (Linux /proc; 0 elsewhere). */
function cpuSeconds() {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    children = (Number(f[13]) + Number(f[14])) / 100; // cutime + cstime, in clock ticks (100/s)
  } catch {
    /* not Linux: own CPU only */
  }
  return (own.user + own.system) / 1e6 + children;
}

class FileTimes extends reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const files = new Map();
    const open = new Map();
    const startWall = Date.now();
    const startCpu = cpuSeconds();
    const startLoad = loadavg()[0];
    const out = process.env.SLICECHECK_TEST_TIMES;
    const parallel = runner.isParallelMode();
    const outStart = out && existsSync(out) ? statSync(out).size : 0;
    const entry = (file) => {
      if (!files.has(file)) files.set(file, { wall: 0, cpu: 0, tests: 0 });
      return files.get(file);
    };
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent?.root) open.set(suite, [Date.now(), cpuSeconds()]);
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const began = open.get(suite);
      if (!began) return;
      open.delete(suite);
      const e = entry(suite.file);
      e.wall += (Date.now() - began[0]) / 1000;
      e.cpu += cpuSeconds() - began[1];
    });
    runner.on(EVENT_TEST_END, (test) => {
      if (test.file) entry(test.file).tests++;
    });
    runner.once(EVENT_RUN_END, () => {
      let rows = [...files].map(([f, e]) => [relative(process.cwd(), f), e]);
      if (parallel) {
        const written = out && existsSync(out) ? readFileSync(out).subarray(outStart) : "";
        rows = String(written)
          .split("\n")
          .filter(Boolean)
          .map((l) => l.split("\t"))
          .map(([f, wall, cpu, tests]) => [f, { wall: +wall, cpu: +cpu, tests: +tests }]);
      }
      rows.sort((a, b) => b[1].wall - a[1].wall);
      console.log(`\n  wall s   cpu s  tests  file${parallel ? " (timed in the workers)" : ""}`);
      for (const [name, e] of rows) {
        console.log(
          `  ${e.wall.toFixed(1).padStart(6)}  ${e.cpu.toFixed(1).padStart(6)}  ${String(e.tests).padStart(5)}  ${name}`,
        );
        if (out && !parallel)
          appendFileSync(out, `${name}\t${e.wall.toFixed(2)}\t${e.cpu.toFixed(2)}\t${e.tests}\n`);
      }
      const wall = (Date.now() - startWall) / 1000;
      console.log(
        `  total: ${wall.toFixed(1)} s wall, ${(cpuSeconds() - startCpu).toFixed(1)} s CPU, ${rows.length} files; load average ${startLoad.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at end`,
      );
    });
  }
}

module.exports = FileTimes;
