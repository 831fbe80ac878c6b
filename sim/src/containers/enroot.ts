#!/usr/bin/env node
// The simulated `enroot` on a simulated node's PATH (./enroot-cli.ts).
import { enrootMain } from "./enroot-cli.js";

process.exitCode = await enrootMain(process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
});
