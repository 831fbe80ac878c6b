// Root hooks that time each test file in mocha's parallel mode, where a worker runs one file
// between the root beforeAll and afterAll (the reporter then sees a file's events only once
// it has finished, so it cannot time them). With SLICECHECK_TEST_TIMES=FILE each file appends
// "file, wall s, CPU s (the worker and its waited-for children), tests" to FILE.
// `npm run test:times` loads it: `--require scripts/file-times-hooks.mjs`.
import { appendFileSync, readFileSync } from "node:fs";
import { relative } from "node:path";

function cpuSeconds() {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    children = (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    /* not Linux: own CPU only */
  }
  return (own.user + own.system) / 1e6 + children;
}

let began = [0, 0];
const filesOf = (suite) => {
  const set = new Set();
  const walk = (s) => {
    if (s.file) set.add(s.file);
    for (const t of s.tests) if (t.file) set.add(t.file);
    for (const c of s.suites) walk(c);
  };
  walk(suite);
  return [...set];
};
const count = (s) => s.tests.length + s.suites.reduce((n, c) => n + count(c), 0);

export const mochaHooks = {
  beforeAll() {
    began = [Date.now(), cpuSeconds()];
  },
  afterAll() {
    const out = process.env.SLICECHECK_TEST_TIMES;
    // In a serial run the reporter times the files itself.
    if (!out || !process.argv[1]?.endsWith("worker.cjs")) return;
    const rootSuite = this.test.parent;
    const files = filesOf(rootSuite).map((f) => relative(process.cwd(), f));
    const name = files.join(",");
    const wall = (Date.now() - began[0]) / 1000;
    appendFileSync(
      out,
      `${name}\t${wall.toFixed(2)}\t${(cpuSeconds() - began[1]).toFixed(2)}\t${count(rootSuite)}\n`,
    );
  },
};
