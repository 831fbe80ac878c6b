#!/usr/bin/env node
// Entry of the resident simulator of one simulated cluster (server.ts): `node main.js CLUSTER_DIR`,
// started detached by `sim up` (lifecycle.ts). It writes its pid, then its port, into the
// cluster's folder, and leaves when `sim down` stops it, or by itself once the cluster's folder
// is gone or names another resident simulator (a test that deleted its cluster without `sim
// down` leaves nothing running for long).
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { readPid } from "../sshd.js";
import { ProgramEnd } from "../workloads/ctx.js";
import { watchDeathsWith } from "../workloads/registry.js";
import { ANSWERS_DIR, PID_FILE, PORT_FILE } from "./files.js";
import { watch } from "./guard.js";
import { listen } from "./server.js";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: resident CLUSTER_DIR\n");
  process.exit(2);
}

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, file);
}

// One workload program's mistake must not end the others it runs, nor the tools' answers: what
// escapes a program (an end thrown outside its own run, an error in a timer) is dropped here.
process.on("unhandledRejection", () => {});
process.on("uncaughtException", (e) => {
  if (!(e instanceof ProgramEnd)) process.stderr.write(`resident: ${e.stack ?? String(e)}\n`);
});

// The deaths of the clients' processes are this process's to see (guard.ts).
watchDeathsWith(watch);

writeAtomically(join(dir, PID_FILE), `${process.pid}\n`);
const answers = join(dir, ANSWERS_DIR);
mkdirSync(answers, { recursive: true, mode: 0o700 });
const server = await listen(answers);
writeAtomically(join(dir, PORT_FILE), `${(server.address() as AddressInfo).port}\n`);

const CHECK_MS = 5_000;
setInterval(() => {
  const ours =
    existsSync(join(dir, "cluster.json")) && readPid(join(dir, PID_FILE)) === process.pid;
  if (!ours) process.exit(0);
}, CHECK_MS);
