#!/usr/bin/env node
// The simulated `slicecheck-train-step` (workloads/train-step.cu): the device header, one
// `SLICECHECK train` line per step, the `train-final` line, exit 0 (1 with wrong results). One
// rank per visible device: one on a MIG instance (a 1-rank all_reduce), every whole GPU given.
// SIGTERM/SIGINT end the run at the next step with the final line, a `stopped` line and exit
// 128 + the signal. SLICECHECK_NCCL_LIB naming a file that is not there stands for a node
// without NCCL: the `train-no-nccl` line and exit 4, before any device is touched.
//
// Time model, per step (each step sleeps its modelled time, so the process runs for real):
// - compute: three n x n GEMMs, 3 x 2n^3 FLOP, at the device's FP32 rate (model.ts: SMs x
//   per-SM peak) times KERNEL_EFFICIENCY, or the memory traffic of the tiled kernel at the GI's
//   share of the bandwidth, whichever is slower (the two overlap on a GPU);
// - all_reduce, in place, of the n x n gradient: one rank is a no-op for NCCL (nccl.ts: 0.2 us
//   in place, from the capture) plus the host's stream synchronisation, SYNC_MS; n ranks over
//   whole GPUs: nccl.ts's 35 us plus 2(r-1)/r of the bytes at the node's bus bandwidth
//   (model.ts allReduceBusGBs: NVLink on SXM boards, PCIe otherwise).
// A driver regression planted with `sim upgrade-driver --regress PROFILE:step_ms=F` multiplies
// the step time of that profile by F; `sim fault NODE wrong-gradient` makes the check find a
// wrong gradient (errors=1), as --plant-error does.

import { existsSync } from "node:fs";
import {
  formatTrainFinalLine,
  formatTrainLine,
  formatTrainNoNcclLine,
  TRAIN_EXIT_NO_NCCL,
} from "../../../src/workloads/parsers/train-step.js";
import { readState } from "../nvsmi/state.js";
import { CONTEXT_MIB, MIB } from "./admit.js";
import { readChaos } from "./chaos.js";
import { nodeCtx } from "./ctx.js";
import type { CallSite } from "./cuda.js";
import type { SimDevice } from "./device.js";
import { eachOption, parseDouble, usageError } from "./flags.js";
import {
  allReduceBusGBs,
  memoryGBs,
  noiseSource,
  profileOfDevice,
  regressionFactor,
  smRates,
} from "./model.js";
import {
  finish,
  finishIfStopped,
  joinDevice,
  openDevice,
  openSession,
  shareOf,
  sleepWatching,
} from "./session.js";

// Runs as a Node process of its own (the resident simulator runs stress, memhog, crasher, serve).
const ctx = nodeCtx();

const PROGRAM = "train-step";
const USAGE =
  "usage: train-step [--duration S] [--steps N] [--size N] [--plant-error]\n" +
  "  --duration S    run for S seconds (default 10, or until --steps when only it is given)\n" +
  "  --steps N       stop after N measured steps\n" +
  "  --size N        matrix size N x N, a multiple of 64 up to 4096 (default: from the\n" +
  "                  device memory, 4096 where it fits)\n" +
  "  --plant-error   corrupt one gradient after the all_reduce, to prove the check can fail\n";

/** A 16 x 16 shared-memory SGEMM reaches about a quarter of the FP32 peak: an assumption (the
 * references hold no measurement of this kernel); kept low so the model errs slow, not fast. */
const KERNEL_EFFICIENCY = 0.25;
/** The tiled kernel reads each operand n/16 times; L2 serves most re-reads. 8 is an assumption. */
const L2_REUSE = 8;
/** cudaStreamSynchronize's round trip around a 1-rank all_reduce: an assumption. */
const SYNC_MS = 0.01;
/** nccl.ts: the launch latency of a multi-GPU all_reduce (the 8x A100 capture's small sizes). */
const MULTI_RANK_LATENCY_MS = 0.035;
const SITE: CallSite = {
  file: "train-step.cu",
  call: "cudaStreamSynchronize(r.stream)",
  needle: "SC_CHECK(cudaStreamSynchronize(r.stream))",
};

let durationS = 10;
let durationGiven = false;
let steps = 0;
let size = 0;
let plantError = false;
eachOption(ctx, PROGRAM, USAGE, (name, next) => {
  const raw = name === "--plant-error" ? "" : next();
  const v = parseDouble(raw);
  if (name === "--duration") {
    if (v === undefined || v <= 0)
      usageError(ctx, PROGRAM, USAGE, `${name} needs seconds > 0, got`, raw);
    durationS = v;
    durationGiven = true;
  } else if (name === "--steps") {
    if (v === undefined || v < 1 || v > 1e9 || !Number.isInteger(v))
      usageError(ctx, PROGRAM, USAGE, `${name} needs a whole number >= 1, got`, raw);
    steps = v;
  } else if (name === "--size") {
    if (v === undefined || v < 64 || v > 4096 || v % 64 !== 0)
      usageError(ctx, PROGRAM, USAGE, `${name} needs a multiple of 64 from 64 to 4096, got`, raw);
    size = v;
  } else if (name === "--plant-error") {
    plantError = true;
  } else {
    usageError(ctx, PROGRAM, USAGE, "unknown argument", name);
  }
});
if (steps > 0 && !durationGiven) durationS = Number.POSITIVE_INFINITY;

// train-step.cu loads NCCL before any CUDA call.
const lib = process.env.SLICECHECK_NCCL_LIB;
if (lib && !existsSync(lib)) {
  process.stdout.write(
    `${formatTrainNoNcclLine(`cannot load ${lib}: ${lib}: cannot open shared object file: No such file or directory`)}\n`,
  );
  process.exit(TRAIN_EXIT_NO_NCCL);
}

/** train-step.cu size_for: six n x n FP32 matrices in at most an eighth of the memory. */
function sizeFor(memoryBytes: number): number {
  let n = 4096;
  while (n > 64 && 6 * 4 * n * n > memoryBytes / 8) n -= 64;
  return n;
}

const s = openSession(ctx, PROGRAM, true);
const first = await openDevice(s);
const devices: SimDevice[] = s.devices.slice(0, 8);
const n = size || sizeFor(Math.min(...devices.map((d) => d.memoryMiB * MIB)));
const matricesMiB = Math.ceil((6 * 4 * n * n) / MIB);
for (const d of devices) await joinDevice(s, d, CONTEXT_MIB + matricesMiB);

function computeMs(d: SimDevice): number {
  const flops = 3 * 2 * n ** 3;
  const rate = d.sm * smRates(d.product, d.architecture).fp32 * 1e12 * KERNEL_EFFICIENCY;
  const bytes = (3 * 2 * n ** 3 * 4) / 16 / L2_REUSE;
  const bw = memoryGBs(d.product) * 1e9 * d.memoryShare;
  return Math.max(flops / (rate * shareOf(s, readState(s.stateDir), d)), bytes / bw) * 1000;
}

function allreduceMs(): number {
  const r = devices.length;
  if (r === 1) return SYNC_MS;
  const bus = allReduceBusGBs(first.boardKey, first.architecture, first.product) * 1e9;
  return MULTI_RANK_LATENCY_MS + ((2 * (r - 1)) / r) * ((4 * n * n) / bus) * 1000;
}

const slower = regressionFactor(s.stateDir, profileOfDevice(first.name), "step_ms");
const wrong = plantError || readChaos(s.stateDir).wrongGradient === true;
const noise = noiseSource(s.pid);
const times: number[] = [];
const t0 = Date.now();
let t = 0;
while (!s.stopping && t < durationS && (steps === 0 || times.length < steps)) {
  // The slowest rank decides the compute half: the all_reduce waits for it.
  const c = Math.max(...devices.map(computeMs)) * slower * noise();
  const a = allreduceMs() * slower * noise();
  const stopped = await sleepWatching(s, c + a, first, SITE);
  if (stopped) break;
  times.push(c + a);
  s.out(formatTrainLine({ step: times.length, stepMs: c + a, computeMs: c, allreduceMs: a }));
  t = (Date.now() - t0) / 1000;
}
if (s.stopping) t = (Date.now() - t0) / 1000;
const sorted = [...times].sort((x, y) => x - y);
const m = Math.floor(sorted.length / 2);
const p50 =
  sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
const errors = wrong ? 1 : 0;
s.out(
  formatTrainFinalLine({
    steps: times.length,
    ranks: devices.length,
    meanStepMs: times.length ? times.reduce((x, y) => x + y, 0) / times.length : 0,
    p50StepMs: p50,
    stepsPerS: t > 0 ? times.length / t : 0,
    errors,
  }),
);
await finishIfStopped(s, t);
await finish(s, errors === 0 ? 0 : 1);
