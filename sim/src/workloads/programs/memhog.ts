// The simulated `slicecheck-memhog` (workloads/memhog.cu): takes device memory in cudaMalloc
// chunks (halved down to 2 MiB when one fails) up to --bytes N, --fraction F of the memory free
// at start, or, with neither, until out of memory; holds it for --hold S; with --check N it
// checks after allocating, and every --check-interval S while holding, that N more bytes can
// still be allocated. Exit 0 (also after an OOM: the line says oom=1), 1 when a check failed,
// 2 on another CUDA error, 3 on bad usage; SIGTERM/SIGINT end the hold with a `stopped` line and exit 128 + the signal.
//
// Memory is the instance's (the GI's under MIG, the board's without) minus what the other
// processes on it hold; the allocation is decided under the state lock, so two memhogs never
// get the same memory.

import {
  formatMemhogCheckLine,
  formatMemhogLine,
} from "../../../../src/workloads/parsers/builtin.js";
import { readState, type SimState, updateState } from "../../nvsmi/state.js";
import { CONTEXT_MIB, capMiB, clientFreeMiB, MIB } from "../admit.js";
import { neighbourFault, recordChaosEvent } from "../chaos.js";
import type { ProgramCtx } from "../ctx.js";
import { SITES } from "../cuda.js";
import { currentGpu, type SimDevice } from "../device.js";
import { eachOption, parseBytes, parseDouble, usageError } from "../flags.js";
import {
  finish,
  finishIfStopped,
  joinDevice,
  openDevice,
  openSession,
  type Session,
  sleepWatching,
} from "../session.js";

const PROGRAM = "memhog";
const USAGE =
  "usage: memhog [--bytes N | --fraction F] [--hold S] [--check N] [--check-interval S]\n" +
  "              [--chunk N]\n" +
  "  --bytes N            allocate N bytes (suffix K, M, G, T: binary)\n" +
  "  --fraction F         allocate F (0 < F <= 1) of the memory free at start\n" +
  "                       (neither: allocate until out of memory)\n" +
  "  --hold S             hold the memory for S seconds before freeing it (default 0)\n" +
  "  --check N            after allocating, check that N more bytes can be allocated,\n" +
  "                       written and read back\n" +
  "  --check-interval S   repeat the check every S seconds while holding\n" +
  "  --chunk N            cudaMalloc chunk size (default 256M)\n";
const MIN_CHUNK = 2 * MIB;
const OPTIONS = new Set([
  "--bytes",
  "--fraction",
  "--hold",
  "--check",
  "--check-interval",
  "--chunk",
]);

interface Options {
  bytes: number | undefined;
  fraction: number | undefined;
  holdS: number;
  checkBytes: number;
  checkIntervalS: number;
  chunk: number;
}

function options(ctx: ProgramCtx): Options {
  const o: Options = {
    bytes: undefined,
    fraction: undefined,
    holdS: 0,
    checkBytes: 0,
    checkIntervalS: 0,
    chunk: 256 * MIB,
  };
  eachOption(ctx, PROGRAM, USAGE, (name, next) => {
    const bad = (what: string, got: string): never => usageError(ctx, PROGRAM, USAGE, what, got);
    if (!OPTIONS.has(name)) usageError(ctx, PROGRAM, USAGE, "unknown argument", name);
    const raw = next();
    if (name === "--bytes")
      o.bytes = parseBytes(raw) ?? bad("--bytes needs a byte count, got", raw);
    else if (name === "--fraction") {
      const f = parseDouble(raw);
      o.fraction =
        f !== undefined && f > 0 && f <= 1 ? f : bad("--fraction needs 0 < F <= 1, got", raw);
    } else if (name === "--hold") {
      const h = parseDouble(raw);
      o.holdS = h !== undefined && h >= 0 ? h : bad("--hold needs seconds >= 0, got", raw);
    } else if (name === "--check") {
      const c = parseBytes(raw);
      o.checkBytes = c !== undefined && c > 0 ? c : bad("--check needs a byte count > 0, got", raw);
    } else if (name === "--check-interval") {
      const c = parseDouble(raw);
      o.checkIntervalS =
        c !== undefined && c > 0 ? c : bad("--check-interval needs seconds > 0, got", raw);
    } else if (name === "--chunk") {
      const c = parseBytes(raw);
      o.chunk = c !== undefined && c >= MIN_CHUNK ? c : bad("--chunk needs at least 2M, got", raw);
    }
  });
  if (o.bytes !== undefined && o.fraction !== undefined) {
    usageError(ctx, PROGRAM, USAGE, "give --bytes or --fraction, not both");
  }
  if (o.checkIntervalS > 0 && o.checkBytes === 0) {
    usageError(ctx, PROGRAM, USAGE, "--check-interval needs --check");
  }
  return o;
}

/** memhog.cu's allocation loop over `freeBytes`: what it ends up holding, and whether one failed. */
function allocate(target: number, untilOom: boolean, freeBytes: number, chunk: number) {
  let left = freeBytes;
  let size = chunk;
  let allocated = 0;
  let hitOom = false;
  while (untilOom || allocated < target) {
    const want = untilOom ? size : Math.min(size, target - allocated);
    if (want > left) {
      hitOom = true;
      if (size <= MIN_CHUNK) break;
      size = Math.floor(size / 2);
      continue;
    }
    left -= want;
    allocated += want;
  }
  return { allocated, oom: hitOom && (untilOom || allocated < target) };
}

export async function memhog(ctx: ProgramCtx): Promise<void> {
  const o = options(ctx);
  const s = openSession(ctx, PROGRAM, true);
  const dev = await openDevice(s);
  await joinDevice(s, dev, CONTEXT_MIB);

  // Under an MPS memory cap the client sees the cap as its total (reference workloads.md 4.2:
  // "Under MPS with CUDA_MPS_PINNED_DEVICE_MEM_LIMIT it is the limit") and what is left of it.
  let heldMiB = CONTEXT_MIB;
  const freeBytes = (state: SimState, d: SimDevice) =>
    clientFreeMiB(state, d, heldMiB, s.stateDir, ctx.env) * MIB;
  const freeAtStart = freeBytes(readState(s.stateDir), dev);
  const cap = capMiB(readState(s.stateDir), dev, s.stateDir, ctx.env);
  const total = (cap ?? dev.memoryMiB) * MIB;
  s.out(`memhog: free_bytes=${freeAtStart} total_bytes=${total} before allocating`);
  const untilOom = o.bytes === undefined && o.fraction === undefined;
  const target =
    o.bytes ?? (o.fraction !== undefined ? Math.floor(freeAtStart * o.fraction) : total);

  const got = await updateState(s.stateDir, (state) => {
    const r = allocate(target, untilOom, freeBytes(state, dev), o.chunk);
    const me = currentGpu(state, dev)?.processes.find((p) => p.pid === s.pid);
    if (me) me.usedMiB = CONTEXT_MIB + Math.ceil(r.allocated / MIB);
    heldMiB = CONTEXT_MIB + Math.ceil(r.allocated / MIB);
    return { changed: me !== undefined, result: r };
  });
  s.out(formatMemhogLine({ allocatedBytes: got.allocated, requestedBytes: target, oom: got.oom }));
  const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
  if (got.oom) await recordChaosEvent(s.stateDir, { ...unit, kind: "oom" }, o.holdS * 1000 + 500);

  /** N more bytes and the 8-byte counter (one 2 MiB page) must fit in what is free now. */
  const check = (): boolean => {
    // Planted isolation-broken: a neighbour's OOM took this instance's memory too.
    const ok =
      o.checkBytes + MIN_CHUNK <= freeBytes(readState(s.stateDir), dev) &&
      !neighbourFault(s.stateDir, unit, s.startedMs, ["oom"], "isolationBroken");
    s.out(formatMemhogCheckLine({ bytes: o.checkBytes, ok }));
    return ok;
  };
  const allOk = await hold(s, dev, o, check);
  await finishIfStopped(s, (Date.now() - s.startedMs) / 1000);
  await finish(s, allOk ? 0 : 1);
}

/** Holds the memory for --hold, checking every --check-interval; whether every check passed. */
async function hold(s: Session, dev: SimDevice, o: Options, check: () => boolean) {
  let allOk = true;
  const site = o.checkBytes > 0 ? SITES.memhogCheck : SITES.memhogFree;
  if (o.checkBytes > 0) allOk = check() && allOk;
  const holdEnd = Date.now() + o.holdS * 1000;
  while (!s.stopping && Date.now() < holdEnd) {
    const left = (holdEnd - Date.now()) / 1000;
    if (o.checkIntervalS > 0 && o.checkIntervalS < left) {
      if (await sleepWatching(s, o.checkIntervalS * 1000, dev, site)) break;
      allOk = check() && allOk;
    } else {
      await sleepWatching(s, left * 1000, dev, site);
    }
  }
  return allOk;
}
