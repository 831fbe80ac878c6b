#!/usr/bin/env node
// `npm run typecheck`: the project's tsc with the arguments given, TypeScript 7's native one where
// its binary is installed, else 5.9 (build.mjs resolveTsc says why).
import { spawnSync } from "node:child_process";
import { resolveTsc } from "./build.mjs";

const tsc = resolveTsc();
if (tsc === null) {
  console.error("slicecheck typecheck: typescript is not installed (npm ci installs it)");
  process.exit(1);
}
const r = spawnSync(process.execPath, [tsc, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
