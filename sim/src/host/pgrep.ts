#!/usr/bin/env node
// The simulated node's `pgrep`: for the GPU daemons the node simulates (see clients.ts) it answers
// from the state (answers.ts); every other pattern goes to the host's real pgrep unchanged.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { simulatedPgrep } from "./answers.js";

const args = process.argv.slice(2);

function real(): number {
  const bin = ["/usr/bin/pgrep", "/bin/pgrep"].find((p) => existsSync(p));
  if (!bin) return 3;
  return spawnSync(bin, args, { stdio: "inherit" }).status ?? 3;
}

const ours = simulatedPgrep(args, process.env.SLICECHECK_SIM_STATE);
if (ours) process.stdout.write(ours.stdout);
process.exitCode = ours ? ours.code : real();
