#!/usr/bin/env node
// Compiles src/ to dist/ so that `slicecheck` and the simulated node tools start as plain
// JavaScript (a layout change runs dozens of simulated nvidia-smi calls; tsx per call is too slow).
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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
rmSync(join(root, "dist"), { recursive: true, force: true });
const r = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], {
  stdio: "inherit",
  cwd: root,
});
process.exit(r.status ?? 1);
