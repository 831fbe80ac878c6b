#!/usr/bin/env node
// Compiles src/ to dist/ so that `slicecheck` and the simulated node tools start as plain
// JavaScript (a layout change runs dozens of simulated nvidia-smi calls; tsx per call is too slow).
// The simulator package (sim/src) is compiled to dist/sim, beside the product it imports
// (errors, the MIG catalogue, parsers): see compileSim.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleCli, bundleSimTools, compileSuites } from "./bundle.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
/**
 * TypeScript 7's native compiler (`@typescript/native`, an alias of typescript@7.0.2) where its
 * platform's binary is installed, else typescript 5.9, which the lint keeps for its parser (7.0
 * has no JS API, ecosystem.md §7). Their JavaScript is the same byte for byte on this project's
 * src/ and sim/src/; the declarations differ only in the order of union members. 7 compiles the
 * two projects in 3.9 s of CPU where 5.9 took 18.5 (December 2026, 2 cores), in every set-up.
 */
export function resolveTsc() {
  for (const pkg of ["@typescript/native", "typescript"]) {
    let path;
    try {
      // By its package.json: 7's exports map does not list bin/tsc.
      path = join(dirname(require.resolve(`${pkg}/package.json`)), "bin", "tsc");
    } catch {
      continue; // not installed: the next one
    }
    if (pkg === "typescript" || nativeTscWorks(path)) return path;
  }
  return null;
}

/** Whether 7's launcher finds its platform's binary (an optional dependency npm may skip). */
function nativeTscWorks(path) {
  return spawnSync(process.execPath, [path, "-v"], { stdio: "ignore" }).status === 0;
}

function run(tsc, project) {
  const r = spawnSync(process.execPath, [tsc, "-p", join(root, project)], {
    stdio: "inherit",
    cwd: root,
  });
  return r.status ?? 1;
}

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']*)\2/g;

/**
 * tsc emits the simulator with the product modules it imports (rootDir is the repository) into
 * a staging folder; only the simulator's own files are kept, moved to dist/sim, and their
 * imports of the product are pointed at dist/ — one copy of each product module at run time
 * (one SlicecheckError class), and no path of the simulator's changes (dist/sim as before).
 */
export function placeSim(stage, dist) {
  const from = join(stage, "sim", "src");
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
    );
  for (const file of walk(from)) {
    const target = join(dist, "sim", relative(from, file));
    const text = readFileSync(file, "utf8").replace(SPECIFIER, (m, lead, q, spec) => {
      const abs = resolve(dirname(file), spec);
      const rel = relative(join(stage, "src"), abs);
      if (rel.startsWith("..")) return m; // the simulator's own module: same place relative
      let to = relative(dirname(target), join(dist, rel));
      if (!to.startsWith(".")) to = `./${to}`;
      return `${lead}${q}${to}${q}`;
    });
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  }
}

function compileSim(tsc) {
  const stage = join(root, ".build-sim");
  rmSync(stage, { recursive: true, force: true });
  const status = run(tsc, "sim/tsconfig.build.json");
  if (status === 0) placeSim(stage, join(root, "dist"));
  rmSync(stage, { recursive: true, force: true });
  return status;
}

/**
 * The CLI bundle's code cache, made by one start of it (src/cli/code-cache.ts), so that the first
 * run after a build starts as fast as the next. Only a speed-up: a failure here is not the
 * build's, and the next start writes the cache instead.
 */
function warmCodeCache() {
  spawnSync(process.execPath, [join(root, "bin", "slicecheck.js"), "--version"], {
    stdio: "ignore",
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tsc = resolveTsc();
  if (tsc === null) {
    // Installed without devDependencies (npm ci --omit=dev): dist/ must already be there.
    console.error("slicecheck build: typescript is not installed; using the existing dist/");
    process.exit(0);
  }
  rmSync(join(root, "dist"), { recursive: true, force: true });
  let status = run(tsc, "tsconfig.build.json");
  if (status === 0) status = compileSim(tsc);
  // The simulated node's tools, one file each, and the CLI (bundle.mjs says why).
  if (status === 0 && (await bundleSimTools(root)) === null)
    console.error(
      "slicecheck build: esbuild is not installed; the CLI and simulated tools run unbundled",
    );
  if (status === 0 && (await bundleCli(root)) !== null) warmCodeCache();
  // The built-in suites as JavaScript, so that a run needs no tsx for them (suite-compiled.ts).
  if (status === 0) await compileSuites(root);
  process.exit(status);
}
