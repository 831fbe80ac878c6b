#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli, compiled to dist/ by `npm run build` (run by `prepare`),
// which also bundles it into dist/cli-bundle (scripts/bundle.mjs: a run starts about 0.3 s
// sooner). Without the bundle (installed without esbuild) the compiled modules run as they are.
import { existsSync } from "node:fs";

const bundle = new URL("../dist/cli-bundle/main.js", import.meta.url);
const { dropOutputToClosedPipes, exitOnInterrupt, main } = await import(
  existsSync(bundle) ? bundle.href : "../dist/cli/main.js"
);

exitOnInterrupt();
dropOutputToClosedPipes();
process.exitCode = await main(process.argv);
