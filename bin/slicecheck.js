#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli, compiled to dist/ by `npm run build` (run by `prepare`).
import { exitOnInterrupt, main } from "../dist/cli/main.js";

exitOnInterrupt();
process.exitCode = await main(process.argv);
