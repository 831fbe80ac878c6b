#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli, compiled to dist/ by `npm run build` (run by `prepare`),
// which also bundles it into one file, dist/cli-bundle/main.cjs (scripts/bundle.mjs). That file
// is compiled with V8's code cache (src/cli/code-cache.ts: a run starts about 0.17 s sooner than
// from ES modules). Without the bundle (installed without esbuild) the compiled modules run as
// they are.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const bundle = fileURLToPath(new URL("../dist/cli-bundle/main.cjs", import.meta.url));
let cli;
let saveCache = () => {};
if (existsSync(bundle)) {
  const { loadBundle } = await import("../dist/cli/code-cache.js");
  // This module's import(), which Node's loader serves: the bundle's own has lost it.
  const loaded = loadBundle(bundle, (specifier) => import(specifier));
  cli = loaded.exports;
  saveCache = loaded.saveCache;
} else {
  cli = await import("../dist/cli/main.js");
}

cli.exitOnInterrupt();
cli.dropOutputToClosedPipes();
process.exitCode = await cli.main(process.argv);
saveCache(process.argv.slice(2));
