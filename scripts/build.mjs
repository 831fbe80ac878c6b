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
let tsc;
try {
  tsc = require.resolve("typescript/bin/tsc");
} catch {
  // Installed without devDependencies (npm ci --omit=dev): dist/ must already be there.
  console.error("slicecheck build: typescript is not installed; using the existing dist/");
  process.exit(0);
}

function run(project) {
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

function compileSim() {
  const stage = join(root, ".build-sim");
  rmSync(stage, { recursive: true, force: true });
  const status = run("sim/tsconfig.build.json");
  if (status === 0) placeSim(stage, join(root, "dist"));
  rmSync(stage, { recursive: true, force: true });
  return status;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  let status = run("tsconfig.build.json");
  if (status === 0) status = compileSim();
  // The simulated node's tools, one file each, and the CLI (bundle.mjs says why).
  if (status === 0 && (await bundleSimTools(root)) === null)
    console.error(
      "slicecheck build: esbuild is not installed; the CLI and simulated tools run unbundled",
    );
  if (status === 0) await bundleCli(root);
  // The built-in suites as JavaScript, so that a run needs no tsx for them (suite-compiled.ts).
  if (status === 0) await compileSuites(root);
  process.exit(status);
}
