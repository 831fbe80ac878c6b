#!/usr/bin/env node
// Thin entry: the CLI lives in src/cli, compiled to dist/ by `npm run build` (run by `prepare`).
import { main } from "../dist/cli/main.js";

process.exitCode = await main(process.argv);
