#!/usr/bin/env node
// Installs what `npm test` and `npm run demo` need on a fresh Debian 12 machine, saying what it
// does: npm dependencies (when node_modules is missing or stale), OpenSSH's sshd for the
// simulated nodes, (from the report suites on) Debian's Chromium, and for the tests libxml2's
// xmllint, poppler, PostgreSQL, Slurm and slurmdbd. Uses only Node builtins, because it runs
// before the dependencies exist.
//
//   node scripts/setup.mjs --for test|demo [--checks]
//
// On a fresh machine most of the set-up is waiting on one core: npm ci's native builds (SQLite's
// amalgamation for better-sqlite3 alone was 85 s of one core at -O3, 41 s at -O1: nativeEnv) and
// apt-get's downloads and unpacking (about 60 s for the test's packages, each package once). Run
// one after the other, with the type-check and lint after them, that was 219 s before the first
// test on 2 cores (6 December 2026). So the Debian packages install in one apt-get started
// first, the npm packages are fetched without their build scripts (`npm ci --ignore-scripts`),
// and the native builds (`npm rebuild`) run beside the apt-get, the build of dist/ and, with
// --checks, the type-check and lint. Nothing starts that needs what another step is still making: the build,
// type-check and lint read only the sources and the JavaScript of node_modules, and the tests
// start only when every step has ended.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_BUNDLE } from "./bundle.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const say = (msg) => console.log(`[setup] ${msg}`);
const since = (t0) => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

/** Runs a command to its end: its exit code (1 when it could not start). Its output goes to the
 * terminal, or with `capture` is kept and returned, so that steps running side by side do not
 * interleave their lines. */
function run(cmd, args, { capture = false, env, log } = {}) {
  const stdio = log ? ["ignore", log, log] : capture ? ["ignore", "pipe", "pipe"] : "inherit";
  const child = spawn(cmd, args, { stdio, cwd: root, env: env ?? process.env });
  const out = [];
  child.stdout?.on("data", (d) => out.push(d));
  child.stderr?.on("data", (d) => out.push(d));
  return new Promise((done) => {
    child.on("error", (e) => done({ code: 1, out: `${cmd}: ${e.message}` }));
    child.on("close", (code) => done({ code: code ?? 1, out: Buffer.concat(out).toString() }));
  });
}

function npmDepsStale() {
  const lock = join(root, "package-lock.json");
  const marker = join(root, "node_modules", ".package-lock.json");
  if (!existsSync(marker)) return true;
  return existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000;
}

/** dist/ is stale when it is missing, when the CLI's bundle is (esbuild installed: the build
 * makes one, and bin/slicecheck.js runs it), or when any file under src/ or sim/src/ (the
 * simulator, built into dist/sim) is newer than either. */
function distStale() {
  const built = [join(root, "dist", "cli", "main.js")];
  if (existsSync(join(root, "node_modules", "esbuild"))) built.push(join(root, CLI_BUNDLE));
  if (!built.every((f) => existsSync(f))) return true;
  const stamp = Math.min(...built.map((f) => statSync(f).mtimeMs));
  const newer = (dir) =>
    readdirSync(dir, { withFileTypes: true }).some((e) =>
      e.isDirectory() ? newer(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs > stamp,
    );
  return newer(join(root, "src")) || newer(join(root, "sim", "src"));
}

const onPath = (cmd) =>
  (process.env.PATH ?? "").split(":").some((d) => d && existsSync(join(d, cmd)));
const hasPostgres = () =>
  existsSync("/usr/lib/postgresql") &&
  readdirSync("/usr/lib/postgresql").some((v) =>
    existsSync(join("/usr/lib/postgresql", v, "bin", "initdb")),
  );

/** Every Debian package `purpose` uses: what it is found by, and why it is needed. */
function debianNeeds(purpose) {
  const test = purpose === "test";
  return [
    {
      packages: ["openssh-server"],
      has: () => ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"].some(existsSync),
      why: "the simulated GPU nodes are real sshd processes",
    },
    {
      packages: ["openssh-client"],
      has: () => existsSync("/usr/bin/ssh-keygen"),
      why: "host and user keys for the simulated nodes",
    },
    // The compliance PDF is printed, and the report tests open the reports, in Debian's
    // Chromium through playwright-core (never `npx playwright install`: it downloads a browser).
    {
      packages: ["chromium"],
      has: () => existsSync("/usr/bin/chromium"),
      why: "slicecheck report --pdf prints the compliance summary with it; the report tests open the reports in it",
    },
    // The JUnit tests validate junit.xml against Jenkins xunit's schema with libxml2's xmllint.
    test && {
      packages: ["libxml2-utils"],
      has: () => onPath("xmllint"),
      why: "xmllint validates junit.xml against the JUnit schema in the report tests",
    },
    // The sign-off tests read the compliance PDF's text (page numbers, scope) with pdftotext.
    test && {
      packages: ["poppler-utils"],
      has: () => onPath("pdftotext"),
      why: "pdftotext reads the compliance PDF in the sign-off tests",
    },
    // The store tests start a real PostgreSQL (initdb + postgres as `nobody` in a temporary
    // folder): `--db postgres://…` is the records database a fleet's runs share.
    test && {
      packages: ["postgresql"],
      has: hasPostgres,
      why: "the records tests run against a real PostgreSQL server (`run --db postgres://…`)",
    },
    // `sim up --slurm` and the slurm suite's tests run Debian's real Slurm (slurmctld, slurmd,
    // srun) authenticated by munge, for the simulated nodes.
    test && {
      packages: ["slurm-wlm", "munge"],
      has: () => ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"].every(existsSync),
      why: "the slurm suite and drain tests run a real Slurm controller and slurmd for the simulated nodes",
    },
    // advise's test reads a real sacct: Debian's slurmdbd storing jobs in MariaDB.
    test && {
      packages: ["slurmdbd", "mariadb-server"],
      has: () => ["/usr/sbin/slurmdbd", "/usr/sbin/mariadbd"].every(existsSync),
      why: "the advise test reads real jobs back through sacct from slurmdbd and MariaDB",
    },
  ].filter(Boolean);
}

/** Installs the packages `needs` lists in one apt-get (as root, or through `sudo -n`), its
 * output kept in a log file that is shown when it fails; after a failure, once more after
 * refreshing the package lists. Resolves to whether they are installed. */
async function aptInstall(needs) {
  const packages = needs.flatMap((n) => n.packages);
  for (const n of needs) say(`installing ${n.packages.join(" ")} with apt-get (${n.why})`);
  const prefix = process.getuid?.() === 0 ? [] : ["sudo", "-n"];
  const cmd = [...prefix, ...(onPath("nice") ? ["nice", "-n", "10"] : []), "apt-get"];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const path = join(mkdtempSync(join(tmpdir(), "slicecheck-setup-")), "apt-get.log");
  const log = openSync(path, "a");
  say(`apt-get's output: ${path}`);
  const t0 = Date.now();
  const install = () =>
    run(cmd[0], [...cmd.slice(1), "install", "-y", "--no-install-recommends", ...packages], {
      env,
      log,
    });
  let r = await install();
  if (r.code !== 0) {
    say("apt-get install failed; refreshing the package lists and trying again");
    await run(cmd[0], [...cmd.slice(1), "update"], { env, log });
    r = await install();
  }
  if (r.code === 0) {
    say(`installed ${packages.join(" ")} (${since(t0)})`);
    return true;
  }
  const tail = readFileSync(path, "utf8").trimEnd().split("\n").slice(-30).join("\n");
  console.error(
    `${tail}\n[setup] could not install ${packages.join(" ")} (the lines above are the end of ${path}). Install them yourself (apt-get install -y ${packages.join(" ")}) and run again.`,
  );
  return false;
}

/** Runs `npm run <script>` for each of `scripts` side by side, each one's output printed whole
 * when it ends. Resolves to whether every one passed. */
async function npmScripts(scripts) {
  const results = await Promise.all(
    scripts.map(async (s) => {
      const t0 = Date.now();
      const r = await run(...later("npm", "run", "--silent", s), { capture: true });
      const out = r.out.trimEnd();
      say(
        `npm run ${s}: ${r.code === 0 ? "passed" : "FAILED"} (${since(t0)})${out ? `\n${out}` : ""}`,
      );
      return r.code === 0;
    }),
  );
  return results.every(Boolean);
}

/** A command and its arguments for run(), at a lower priority (nice 10) where `nice` is on the
 * PATH: the steps beside the native builds yield the cores to them, which are the longest. */
function later(cmd, ...args) {
  return onPath("nice") ? ["nice", ["-n", "10", cmd, ...args]] : [cmd, args];
}

/** The installed dependencies with build scripts of their own (npm's hidden lockfile marks them
 * `hasInstallScript`), by name. */
export function nativePackages(dir = root) {
  const lock = JSON.parse(readFileSync(join(dir, "node_modules", ".package-lock.json"), "utf8"));
  const names = Object.entries(lock.packages ?? {})
    .filter(([path, p]) => p.hasInstallScript && path.includes("node_modules/"))
    .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
  return [...new Set(names)];
}

/** The optimisation level the set-up compiles SQLite at (nativeEnv). */
export const SQLITE_OPT = "-O1";

/**
 * The environment of one package's native build. SQLite's amalgamation, one C file of 9 MB, is
 * the longest step of the whole set-up: 85 s of one core at better-sqlite3's -O3, 41 s at -O1
 * (here, December 2026; 2 slow cores take longer). -O1, given last in CFLAGS so that it wins
 * over the package's own -O3, keeps SQLite optimised but halves that. The tests and the demo
 * write a few thousand rows; `BENCH=records npm run bench` says at which level the SQLite it
 * measures was compiled (sqliteOptLevel), and `npm rebuild better-sqlite3` gives back -O3. Only
 * better-sqlite3's C: its C++ binding (about 4 s) and the other packages keep their flags.
 */
export function nativeEnv(name, env = process.env) {
  const out = { ...env, JOBS: "max" };
  if (name === "better-sqlite3") out.CFLAGS = [env.CFLAGS, SQLITE_OPT].filter(Boolean).join(" ");
  return out;
}

/** The -O level SQLite's C was last compiled at in `dir`'s better-sqlite3 (the last -O of the
 * compile command node-gyp's make left in its .d file), or null where there is none to read (a
 * prebuilt binary, or no build). */
export function sqliteOptLevel(dir = root) {
  const deps = "build/Release/.deps/Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o.d";
  let text;
  try {
    text = readFileSync(join(dir, "node_modules", "better-sqlite3", deps), "utf8");
  } catch {
    return null;
  }
  const cmd = text.split("\n").find((l) => l.startsWith("cmd_")) ?? "";
  return cmd.match(/(?<=\s)-O[0-3sgz]?(?=\s)/g)?.at(-1) ?? null;
}

/** The dependencies' install scripts that `npm ci --ignore-scripts` skipped (node-gyp builds of
 * better-sqlite3, ssh2's crypto binding and cpu-features, esbuild's check of its binary), one
 * `npm rebuild` each, side by side: better-sqlite3's alone is about 45 s (nativeEnv), the rest
 * about 14.
 * node-gyp is given both cores (JOBS=max: better-sqlite3's C++ beside SQLite's C). Never the
 * project's own prepare: setup's build is that. Resolves to whether every one passed. */
async function nativeBuilds(t0) {
  const results = await Promise.all(
    nativePackages().map(async (name) => {
      const r = await run("npm", ["rebuild", name, "--no-audit", "--no-fund"], {
        capture: true,
        env: nativeEnv(name),
      });
      if (r.code !== 0) console.error(`[setup] npm rebuild ${name} FAILED:\n${r.out}`);
      return r.code === 0;
    }),
  );
  const ok = results.every(Boolean);
  say(`native builds of the npm dependencies: ${ok ? "done" : "FAILED"} (${since(t0)})`);
  return ok;
}

/** The npm dependencies: fetched without their build scripts, then the native builds beside
 * the build of dist/ and `beside` (the checks). Resolves to whether all of it passed. */
async function npmInstall(beside) {
  say(
    "installing npm dependencies (npm ci --ignore-scripts, then their native builds beside the rest)",
  );
  const t0 = Date.now();
  if ((await run("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund"])).code !== 0)
    return false;
  const native = nativeBuilds(t0);
  const built = (await run(...later("npm", "run", "build"))).code === 0;
  const others = built && (await beside());
  return (await native) && built && others;
}

/** Builds dist/ when a source is newer (distStale). Resolves to whether it is up to date. */
async function buildIfStale() {
  if (!distStale()) return true;
  say("building dist/ from src/ (npm run build)");
  return (await run("npm", ["run", "build"])).code === 0;
}

/** Sets the machine up for `purpose` ("test" or "demo"); `checks` are npm scripts (the type-check
 * and lint) run beside the installs and builds. Resolves to whether everything passed. */
async function setup(purpose, checks = []) {
  const needs = debianNeeds(purpose);
  const missing = needs.filter((n) => !n.has());
  for (const n of needs.filter((x) => !missing.includes(x)))
    say(`${n.packages.join(" and ")} ${n.packages.length > 1 ? "are" : "is"} installed`);
  // Started first: its downloads and unpacking need nothing from npm.
  const debian = missing.length > 0 ? aptInstall(missing) : Promise.resolve(true);
  const beside = () => npmScripts(checks);
  let ok;
  if (npmDepsStale()) ok = await npmInstall(beside);
  else ok = (await buildIfStale()) && (await beside());
  // Always waited for: an apt-get stopped half-way leaves dpkg to be repaired by hand.
  ok = (await debian) && ok;
  if (ok) say(`ready for ${purpose}`);
  return ok;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const purpose = argv.includes("--for") ? argv[argv.indexOf("--for") + 1] : "test";
  const checks = argv.includes("--checks") ? ["typecheck", "lint"] : [];
  process.exit((await setup(purpose, checks)) ? 0 : 1);
}
