// What every simulated built-in program does around its work, as workloads/slicecheck.cuh does
// it on a real GPU: find the node's state, see its devices, print the device header, register in
// the process list, sleep in small steps (so that a kill, a timeout or an MPS fault takes effect
// within a tenth of a second) and leave the process list on every exit it controls.
//
// Signals follow the CUDA programs: stress and memhog stop gracefully on SIGTERM/SIGINT (their
// loops end, the final line is printed, then a `stopped` line and exit 128 + the signal, so a
// cut-short run never reads as a pass); the crasher has no handler. Without a handler the
// simulator still unregisters first and then re-raises the signal, so the caller sees death by
// that signal while nvidia-smi does not keep the dead process.
//
// Everything of the process (pid, environment, streams, exit, signals, sleeps) comes from the
// program's ctx.ts context, so that the same session runs in a Node process of its own or in
// the resident simulator for a bash client.

import { constants as osConstants } from "node:os";
import { formatStoppedLine } from "../../../src/workloads/parsers/builtin.js";
import { fenceOf } from "../fence.js";
import { readState, readStateShared, type SimProcess, type SimState } from "../nvsmi/state.js";
import { admit, MIB } from "./admit.js";
import { maybeDropConnection, neighbourFault } from "./chaos.js";
import type { ProgramCtx, ProgramSignal } from "./ctx.js";
import {
  type CallSite,
  CUDA,
  type CudaError,
  cudaErrorByCode,
  EXIT_CUDA,
  formatCudaError,
  SITES,
} from "./cuda.js";
import { currentGpu, onSameUnit, type SimDevice, visibleDevices } from "./device.js";
import { clientLimits, computeShare, doomOf } from "./mps.js";
import { computesOn } from "./proc.js";
import { type Registration, register, unregister } from "./registry.js";

const STEP_MS = 50;

export interface Session {
  /** The process: its pid, environment, streams, exit and signals. */
  ctx: ProgramCtx;
  /** The name the program prints (`stress`). */
  program: string;
  /** The name in the process list and the kernel log (`slicecheck-stress`). */
  processName: string;
  stateDir: string;
  pid: number;
  devices: SimDevice[];
  out(line: string): void;
  err(line: string): void;
  /** Set by a graceful signal, or once the process is on its way out: loops stop. */
  stopping: boolean;
  /** The signal that asked a graceful program to stop early, if one did. */
  stopSignal: "SIGTERM" | "SIGINT" | null;
  /** Epoch ms the process started: planted faults only reach processes running at the time. */
  startedMs: number;
}

function dieBySignal(ctx: ProgramCtx, stateDir: string, sig: ProgramSignal): void {
  void unregister(stateDir, ctx.pid)
    .catch(() => {})
    .then(() => ctx.raise(sig))
    // In the resident, raise throws its ProgramEnd: the end is recorded already.
    .catch(() => {});
}

/** Reads the environment; exits 255 as the other simulated tools do when it is not a node. */
export function openSession(
  ctx: ProgramCtx,
  program: string,
  graceful: boolean,
  processName = `slicecheck-${program}`,
): Session {
  const stateDir = ctx.env.SLICECHECK_SIM_STATE;
  if (!stateDir) {
    ctx.stderr(`${processName} (simulated): SLICECHECK_SIM_STATE is not set\n`);
    return ctx.exit(255);
  }
  let state: SimState;
  try {
    state = readState(stateDir);
  } catch (e) {
    ctx.stderr(`${processName} (simulated): ${(e as Error).message}\n`);
    return ctx.exit(255);
  }
  const s: Session = {
    ctx,
    program,
    processName,
    stateDir,
    pid: ctx.pid,
    devices: visibleDevices(state, ctx.env.CUDA_VISIBLE_DEVICES, fenceOf(ctx.env)),
    out: (line) => ctx.stdout(`${line}\n`),
    err: (line) => ctx.stderr(`${line}\n`),
    stopping: false,
    stopSignal: null,
    startedMs: Date.now(),
  };
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    ctx.onSignal(sig, () => {
      if (graceful && sig !== "SIGHUP") {
        s.stopping = true;
        s.stopSignal ??= sig;
        return;
      }
      dieBySignal(ctx, stateDir, sig);
    });
  }
  return s;
}

/** Unregisters and exits with `code`. */
export async function finish(s: Session, code: number): Promise<never> {
  s.stopping = true;
  try {
    await unregister(s.stateDir, s.pid);
  } catch {
    // The state directory is gone (node torn down): nothing left to unregister from.
  }
  return s.ctx.exit(code);
}

/**
 * sc_stopped_exit: a run cut short by a signal is no pass. Its last line says so and the exit is
 * 128 + the signal, what a shell reports for a process killed by it; returns normally when no
 * signal came.
 */
export async function finishIfStopped(s: Session, tS: number): Promise<void> {
  if (s.stopSignal === null) return;
  s.out(formatStoppedLine({ program: s.program, signal: s.stopSignal, t: tS }));
  await finish(s, 128 + osConstants.signals[s.stopSignal]);
}

/** sc_cuda_fail: the CUDA error line on stderr, exit 2. */
export async function dieOfCuda(s: Session, e: CudaError, site: CallSite): Promise<never> {
  s.err(formatCudaError(e, site));
  return finish(s, EXIT_CUDA);
}

/** sc_open_device: device 0 or the CUDA error, then the `slicecheck-device` header line. */
export async function openDevice(s: Session): Promise<SimDevice> {
  if (await maybeDropConnection(s.stateDir, s.processName, s.pid)) {
    // The connection is gone; nobody reads this process any more.
    s.err(`${s.processName} (simulated): dropped the sshd session (planted drop-connection)`);
    return finish(s, 255);
  }
  const d = s.devices[0];
  if (!d) return dieOfCuda(s, CUDA.noDevice, SITES.setDeviceFlags);
  s.out(
    `slicecheck-device program=${s.program} uuid=${d.uuid} sms=${d.sm} cc=${d.cc} memory_bytes=${d.memoryMiB * MIB} name=${d.name}`,
  );
  return d;
}

export function entryFor(dev: SimDevice, usedMiB: number): Registration {
  return { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null, usedMiB };
}

/** Creates the context on `dev` holding `needMiB`; refusals end the process as CUDA would. */
export async function joinDevice(s: Session, dev: SimDevice, needMiB: number): Promise<void> {
  const a = await register(s.stateDir, s.processName, s.pid, (state) => {
    const verdict = admit(state, dev, needMiB, { pid: s.pid, env: s.ctx.env });
    const entry = entryFor(dev, needMiB);
    // Other clients' shares depend on this one's thread percentage under MPS.
    const pct = clientLimits(currentGpu(state, dev), s.ctx.env).threadPct;
    if (pct !== null) entry.threadPct = pct;
    return { entries: verdict === "ok" ? [entry] : [], result: verdict };
  });
  if (a !== "ok") {
    await dieOfCuda(s, a === "oom" ? CUDA.oom : CUDA.mpsNotReady, SITES.setDevice);
  }
}

/** Live processes computing on the device's unit (at least 1: this one, `pid`). */
export function sharersOf(state: SimState, dev: SimDevice, pid: number): number {
  const gpu = currentGpu(state, dev);
  const pids = new Set(
    (gpu?.processes ?? [])
      .filter((p) => p.type !== "G" && onSameUnit(dev, p) && computesOn(p))
      .map((p) => p.pid),
  );
  pids.add(pid);
  return pids.size;
}

/** The share of its unit's peak this process computes at now (time-slicing, or MPS with its
 * clients' thread percentages: mps.ts computeShare). */
export function shareOf(s: Session, state: SimState, dev: SimDevice): number {
  const gpu = currentGpu(state, dev);
  const peers = new Map<number, SimProcess>();
  for (const p of gpu?.processes ?? [])
    if (p.type !== "G" && p.pid !== s.pid && onSameUnit(dev, p) && computesOn(p))
      peers.set(p.pid, p);
  return computeShare(gpu, [...peers.values()], clientLimits(gpu, s.ctx.env).threadPct);
}

/** The error an MPS fault elsewhere left for this client, or null. */
export function doomed(s: Session, dev: SimDevice): number | null {
  // Planted isolation-broken: a neighbour's crash takes this process down with the same error.
  const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
  if (neighbourFault(s.stateDir, unit, s.startedMs, ["crash"], "isolationBroken")) return 700;
  try {
    return doomOf(readStateShared(s.stateDir), dev.gpu.index, s.pid);
  } catch {
    return null;
  }
}

/**
 * Sleeps `ms` in small steps. Returns early (true) when the session is stopping. A client that an
 * MPS fault doomed gets the fault's error at its next CUDA call, `site`, and exits there.
 */
export async function sleepWatching(
  s: Session,
  ms: number,
  dev: SimDevice,
  site: CallSite,
): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (s.stopping) return true;
    const doom = doomed(s, dev);
    if (doom !== null) {
      await dieOfCuda(s, cudaErrorByCode(doom), site);
    }
    const left = end - Date.now();
    if (left <= 0) return false;
    await s.ctx.sleep(Math.min(STEP_MS, left));
  }
}
