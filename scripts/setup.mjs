#!/usr/bin/env node
// Installs what `npm test` and `npm run demo` need on a fresh Debian 12 machine, saying what it
// does: npm dependencies (when node_modules is missing or stale), OpenSSH's sshd for the
// simulated nodes, (from the report suites on) Debian's Chromium, and for the tests libxml2's
// xmllint. Uses only Node builtins, because it runs before the dependencies exist.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_BUNDLE } from "./bundle.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const purpose = process.argv.includes("--for")
  ? process.argv[process.argv.indexOf("--for") + 1]
  : "test";
const say = (msg) => console.log(`[setup] ${msg}`);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: "inherit", cwd: root, ...opts });
  return r.status === 0;
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

const isRoot = process.getuid?.() === 0;
function apt(packages, why) {
  say(`installing ${packages.join(" ")} with apt-get (${why})`);
  const prefix = isRoot ? [] : ["sudo", "-n"];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () =>
    run(
      prefix[0] ?? "apt-get",
      [
        ...prefix.slice(1),
        ...(prefix.length ? ["apt-get"] : []),
        "install",
        "-y",
        "--no-install-recommends",
        ...packages,
      ],
      { env },
    );
  if (install()) return;
  say("apt-get install failed; refreshing the package lists and trying again");
  run(
    prefix[0] ?? "apt-get",
    [...prefix.slice(1), ...(prefix.length ? ["apt-get"] : []), "update"],
    { env },
  );
  if (!install()) {
    console.error(
      `[setup] could not install ${packages.join(" ")}. Install them yourself (apt-get install -y ${packages.join(" ")}) and run again.`,
    );
    process.exit(1);
  }
}

if (npmDepsStale()) {
  say("installing npm dependencies (npm ci)");
  if (!run("npm", ["ci", "--no-audit", "--no-fund"])) process.exit(1);
} else if (distStale()) {
  say("building dist/ from src/ (npm run build)");
  if (!run("npm", ["run", "build"])) process.exit(1);
}

if (!["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"].some((p) => existsSync(p))) {
  apt(["openssh-server"], "the simulated GPU nodes are real sshd processes");
} else say("sshd is installed");

if (!existsSync("/usr/bin/ssh-keygen"))
  apt(["openssh-client"], "host and user keys for the simulated nodes");

// The compliance PDF is printed, and the report tests open the reports, in Debian's Chromium
// through playwright-core (never `npx playwright install`: it downloads a browser).
if (["test", "demo"].includes(purpose) && !existsSync("/usr/bin/chromium")) {
  apt(
    ["chromium"],
    "slicecheck report --pdf prints the compliance summary with it; the report tests open the reports in it",
  );
} else if (existsSync("/usr/bin/chromium")) say("chromium is installed");

// The JUnit tests validate junit.xml against Jenkins xunit's schema with libxml2's xmllint.
const onPath = (cmd) =>
  (process.env.PATH ?? "").split(":").some((d) => d && existsSync(join(d, cmd)));
if (purpose === "test" && !onPath("xmllint"))
  apt(
    ["libxml2-utils"],
    "xmllint validates junit.xml against the JUnit schema in the report tests",
  );
else if (onPath("xmllint")) say("xmllint is installed");

// The sign-off tests read the compliance PDF's text (page numbers, scope) with poppler's pdftotext.
if (purpose === "test" && !onPath("pdftotext"))
  apt(["poppler-utils"], "pdftotext reads the compliance PDF in the sign-off tests");
else if (onPath("pdftotext")) say("pdftotext is installed");

// The store tests start a real PostgreSQL (initdb + postgres as `nobody` in a temporary
// folder): `--db postgres://…` is the records database a fleet's runs share.
const hasPostgres = () =>
  existsSync("/usr/lib/postgresql") &&
  readdirSync("/usr/lib/postgresql").some((v) =>
    existsSync(join("/usr/lib/postgresql", v, "bin", "initdb")),
  );
if (purpose === "test" && !hasPostgres())
  apt(
    ["postgresql"],
    "the records tests run against a real PostgreSQL server (`run --db postgres://…`)",
  );
else if (hasPostgres()) say("postgresql is installed");

// `sim up --slurm` and the slurm suite's tests run Debian's real Slurm (slurmctld, slurmd,
// srun) authenticated by munge, for the simulated nodes.
if (
  purpose === "test" &&
  !["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged"].every((p) => existsSync(p))
)
  apt(
    ["slurm-wlm", "munge"],
    "the slurm suite and drain tests run a real Slurm controller and slurmd for the simulated nodes",
  );
else if (existsSync("/usr/sbin/slurmctld")) say("slurm-wlm and munge are installed");

// advise's test reads a real sacct: Debian's slurmdbd storing jobs in MariaDB.
if (purpose === "test" && !["/usr/sbin/slurmdbd", "/usr/sbin/mariadbd"].every((p) => existsSync(p)))
  apt(
    ["slurmdbd", "mariadb-server"],
    "the advise test reads real jobs back through sacct from slurmdbd and MariaDB",
  );
else if (existsSync("/usr/sbin/slurmdbd")) say("slurmdbd and mariadb-server are installed");

say(`ready for ${purpose}`);
