// An exclusive lock on a state directory, so that concurrent simulated nvidia-smi calls (a layout
// change runs dozens, mig-parted-style tools run them in parallel) read-modify-write gpus.json
// one at a time. `mkdir` is atomic on every local filesystem; the owner file lets a later caller
// break a lock whose process died (a killed `nvidia-smi` must not wedge the node).

import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";

const RETRY_MS = 5;
/** A lock older than this whose owner is gone is broken. Real calls hold it for milliseconds. */
const STALE_MS = 10_000;
const GIVE_UP_MS = 60_000;

interface Owner {
  pid: number;
  at: number;
}

function ownerAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOwner(lockDir: string): Owner | undefined {
  try {
    const o = JSON.parse(readFileSync(join(lockDir, "owner"), "utf8")) as Partial<Owner>;
    if (typeof o.pid === "number" && typeof o.at === "number") return { pid: o.pid, at: o.at };
  } catch {
    // Being created right now, or left half-written by a killed owner: judged by age below.
  }
  return undefined;
}

function isStale(lockDir: string, firstSeen: number): boolean {
  const owner = readOwner(lockDir);
  const now = Date.now();
  if (!owner) return now - firstSeen > STALE_MS;
  if (owner.pid === process.pid) return false;
  return !ownerAlive(owner.pid) || now - owner.at > STALE_MS * 6;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function withLock<T>(stateDir: string, fn: () => T | Promise<T>): Promise<T> {
  const lockDir = join(stateDir, "lock");
  const started = Date.now();
  let firstSeen = Date.now();
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "EEXIST") {
        throw new SlicecheckError("SIM", `cannot lock ${stateDir}: ${(e as Error).message}`, {
          stateDir,
        });
      }
      if (isStale(lockDir, firstSeen)) {
        rmSync(lockDir, { recursive: true, force: true });
        firstSeen = Date.now();
        continue;
      }
      if (Date.now() - started > GIVE_UP_MS) {
        throw new SlicecheckError("SIM", `timed out waiting for the lock on ${stateDir}`, {
          stateDir,
        });
      }
      await sleep(RETRY_MS + Math.floor(Math.random() * RETRY_MS));
    }
  }
  try {
    writeFileSync(join(lockDir, "owner"), JSON.stringify({ pid: process.pid, at: Date.now() }));
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}
