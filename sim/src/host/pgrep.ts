#!/usr/bin/env node
// The simulated node's `pgrep`: for the GPU daemons the node simulates (see clients.ts) it answers
// from the state; every other pattern goes to the host's real pgrep unchanged.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { DAEMON_CLIENTS, fakePid, MODULE_CLIENTS, nodeClients } from "./clients.js";

const args = process.argv.slice(2);
const stateDir = process.env.SLICECHECK_SIM_STATE;
const pattern = [...args].reverse().find((a) => !a.startsWith("-"));
const exact = args.includes("-x");
const list = args.includes("-l") || args.includes("-a");

function real(): number {
  const bin = ["/usr/bin/pgrep", "/bin/pgrep"].find((p) => existsSync(p));
  if (!bin) return 3;
  return spawnSync(bin, args, { stdio: "inherit" }).status ?? 3;
}

function simulated(held: readonly string[]): number {
  const hits = held.filter(
    (h) => !MODULE_CLIENTS.includes(h) && (exact ? h === pattern : h.includes(pattern ?? "")),
  );
  for (const h of hits) process.stdout.write(list ? `${fakePid(h)} ${h}\n` : `${fakePid(h)}\n`);
  return hits.length > 0 ? 0 : 1;
}

if (!stateDir || pattern === undefined) {
  process.exitCode = real();
} else {
  const held = nodeClients(stateDir);
  const ours = [...DAEMON_CLIENTS, ...held].some((d) =>
    exact ? d === pattern : d.includes(pattern),
  );
  process.exitCode = ours ? simulated(held) : real();
}
