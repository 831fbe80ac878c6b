#!/usr/bin/env node
// The simulated `docker` on a simulated node's PATH (./runtime.ts).
import { runtimeMain } from "./runtime.js";

process.exitCode = await runtimeMain("docker", process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
});
