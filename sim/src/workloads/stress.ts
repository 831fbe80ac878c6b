#!/usr/bin/env node
// The simulated `slicecheck-stress` (workloads/stress.cu): the device header, a
// `SLICECHECK stress` line every --interval seconds (tflops over that interval, errors counted
// since the start), a `stress-final` line (tflops over the run, iterations = kernel launches of
// about 25 ms each). SIGTERM/SIGINT end the run early with the final line, then a `stopped`
// line and exit 128 + the signal. Exit 0, or 1 when results were wrong (--plant-error), 2 on a
// CUDA error, 3 on bad usage.
//
// The rate is the device's SMs times the product's per-SM FP32 peak (model.ts) with ±1 % noise,
// times its share of the compute unit, re-counted at every line (session.ts shareOf: equal
// shares when time-sliced, thread percentages under MPS): MIG instances never see each other.

import { formatStressFinalLine, formatStressLine } from "../../../src/workloads/parsers/builtin.js";
import { readState } from "../nvsmi/state.js";
import { CONTEXT_MIB } from "./admit.js";
import { neighbourFault } from "./chaos.js";
import { SITES } from "./cuda.js";
import { eachOption, parseDouble, usageError } from "./flags.js";
import { noiseSource, profileOfDevice, regressionFactor, smRates } from "./model.js";
import {
  finish,
  finishIfStopped,
  joinDevice,
  openDevice,
  openSession,
  shareOf,
  sleepWatching,
} from "./session.js";

const PROGRAM = "stress";
const USAGE =
  "usage: stress [--duration S] [--interval S] [--plant-error]\n" +
  "  --duration S    run for S seconds (default 10)\n" +
  "  --interval S    print a progress line every S seconds (default 1)\n" +
  "  --plant-error   corrupt one result on purpose, to prove the check can fail\n";
/** stress.cu calibrates each launch to last about this long. */
const LAUNCH_S = 0.025;

let durationS = 10;
let intervalS = 1;
let plantError = false;
eachOption(process.argv.slice(2), PROGRAM, USAGE, (name, next) => {
  if (name === "--duration" || name === "--interval") {
    const raw = next();
    const v = parseDouble(raw);
    if (v === undefined || v <= 0)
      usageError(PROGRAM, USAGE, `${name} needs seconds > 0, got`, raw);
    if (name === "--duration") durationS = v;
    else intervalS = v;
  } else if (name === "--plant-error") {
    plantError = true;
  } else {
    usageError(PROGRAM, USAGE, "unknown argument", name);
  }
});

const s = openSession(PROGRAM, true);
const dev = await openDevice(s);
// The kernel's own buffer is a single counter: the context is all it holds.
await joinDevice(s, dev, CONTEXT_MIB);

// A driver regression planted with `sim upgrade-driver --regress` scales this profile's rate.
const peak =
  dev.sm *
  smRates(dev.product, dev.architecture).fp32 *
  regressionFactor(s.stateDir, profileOfDevice(dev.name), "tflops");
const noise = noiseSource(s.pid);
const errors = plantError ? 1 : 0;
const t0 = Date.now();
const elapsed = () => (Date.now() - t0) / 1000;
let tflop = 0;
let tflopAtLast = 0;
let t = 0;
let tLast = 0;
let nextReport = intervalS;

const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
while (!s.stopping && t < durationS) {
  // Planted hang: once a neighbour faults, this stress stops progressing and ignores SIGTERM,
  // so only the deadline's SIGKILL ends it.
  if (neighbourFault(s.stateDir, unit, s.startedMs, ["oom", "crash", "kill", "hang"], "hang")) {
    for (;;) await new Promise((r) => setTimeout(r, 1000));
  }
  // Planted isolation-broken: a neighbour's OOM halves this instance's throughput.
  const slowed = neighbourFault(s.stateDir, unit, s.startedMs, ["oom"], "isolationBroken") ? 2 : 1;
  const wait = Math.min(nextReport, durationS) - t;
  const stopped = await sleepWatching(s, wait * 1000, dev, SITES.stressSync);
  const now = elapsed();
  tflop += ((peak * noise() * shareOf(readState(s.stateDir), dev)) / slowed) * (now - t);
  t = now;
  if (t >= nextReport) {
    s.out(formatStressLine({ t, tflops: (tflop - tflopAtLast) / (t - tLast), errors }));
    tflopAtLast = tflop;
    tLast = t;
    while (nextReport <= t) nextReport += intervalS;
  }
  if (stopped) break;
}
s.out(
  formatStressFinalLine({
    tflops: t > 0 ? tflop / t : 0,
    errors,
    iterations: Math.max(1, Math.ceil(t / LAUNCH_S)),
  }),
);
await finishIfStopped(s, t);
await finish(s, errors === 0 ? 0 : 1);
