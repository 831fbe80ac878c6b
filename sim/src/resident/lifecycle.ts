// Starting and stopping a cluster's resident simulator (server.ts) with `sim up` and `sim down`.
// Nothing depends on it being up: each tool's wrapper runs the tool as its own Node process when
// no resident simulator answers, so a failed start costs test time, never a result.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isAlive, readPid } from "../sshd.js";
import { builtEntry, RESIDENT_SCRIPT } from "../tools.js";
import { PID_FILE, PORT_FILE } from "./files.js";

/** How its command line ends, bundled or not. */
const ENTRY = "resident/main.js";

/** The pid in the cluster's pid file when that process is this cluster's resident simulator. */
function runningResident(dir: string): number | null {
  const pid = readPid(join(dir, PID_FILE));
  if (!pid || !isAlive(pid)) return null;
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return argv.some((a) => a.endsWith(ENTRY)) && argv.includes(dir) ? pid : null;
  } catch {
    return null;
  }
}

const START_WAIT_MS = 5_000;

/** Starts the cluster's resident simulator unless it runs; waits (a while) for its port. */
export async function ensureResident(dir: string): Promise<void> {
  if (runningResident(dir) && existsSync(join(dir, PORT_FILE))) return;
  const entry = builtEntry(RESIDENT_SCRIPT);
  if (!existsSync(entry)) return;
  rmSync(join(dir, PORT_FILE), { force: true });
  const child = spawn(process.execPath, [entry, dir], {
    detached: true,
    stdio: "ignore",
    cwd: "/",
  });
  child.on("error", () => undefined);
  child.unref();
  for (let t = 0; t < START_WAIT_MS && !existsSync(join(dir, PORT_FILE)); t += 20) await sleep(20);
}

/** Stops it (the port file first, so that no wrapper connects to a closing server). */
export async function stopResident(dir: string): Promise<void> {
  rmSync(join(dir, PORT_FILE), { force: true });
  const pid = runningResident(dir);
  rmSync(join(dir, PID_FILE), { force: true });
  if (!pid) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(10);
}
