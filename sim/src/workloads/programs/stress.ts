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

import {
  formatStressFinalLine,
  formatStressLine,
} from "../../../../src/workloads/parsers/builtin.js";
import { readState } from "../../nvsmi/state.js";
import { CONTEXT_MIB } from "../admit.js";
import { neighbourFault } from "../chaos.js";
import type { ProgramCtx } from "../ctx.js";
import { SITES } from "../cuda.js";
import type { SimDevice } from "../device.js";
import { type RunOptions, runOptions } from "../flags.js";
import { noiseSource, profileOfDevice, regressionFactor, smRates } from "../model.js";
import {
  finish,
  finishIfStopped,
  joinDevice,
  openDevice,
  openSession,
  type Session,
  shareOf,
  sleepWatching,
} from "../session.js";

const PROGRAM = "stress";
const USAGE =
  "usage: stress [--duration S] [--interval S] [--plant-error]\n" +
  "  --duration S    run for S seconds (default 10)\n" +
  "  --interval S    print a progress line every S seconds (default 1)\n" +
  "  --plant-error   corrupt one result on purpose, to prove the check can fail\n";
/** stress.cu calibrates each launch to last about this long. */
const LAUNCH_S = 0.025;

export async function stress(ctx: ProgramCtx): Promise<void> {
  const o = runOptions(ctx, PROGRAM, USAGE);
  const s = openSession(ctx, PROGRAM, true);
  const dev = await openDevice(s);
  // The kernel's own buffer is a single counter: the context is all it holds.
  await joinDevice(s, dev, CONTEXT_MIB);
  const errors = o.plantError ? 1 : 0;
  const { tflop, t } = await compute(s, dev, o, errors);
  s.out(
    formatStressFinalLine({
      tflops: t > 0 ? tflop / t : 0,
      errors,
      iterations: Math.max(1, Math.ceil(t / LAUNCH_S)),
    }),
  );
  await finishIfStopped(s, t);
  await finish(s, errors === 0 ? 0 : 1);
}

/** The run's loop: a line every interval until the duration or a graceful signal. */
async function compute(s: Session, dev: SimDevice, o: RunOptions, errors: number) {
  // A driver regression planted with `sim upgrade-driver --regress` scales this profile's rate.
  const peak =
    dev.sm *
    smRates(dev.product, dev.architecture).fp32 *
    regressionFactor(s.stateDir, profileOfDevice(dev.name), "tflops");
  const noise = noiseSource(s.pid);
  const t0 = Date.now();
  const elapsed = () => (Date.now() - t0) / 1000;
  let tflop = 0;
  let tflopAtLast = 0;
  let t = 0;
  let tLast = 0;
  let nextReport = o.intervalS;
  const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
  while (!s.stopping && t < o.durationS) {
    // Planted hang: once a neighbour faults, this stress stops progressing and ignores SIGTERM,
    // so only the deadline's SIGKILL ends it.
    if (neighbourFault(s.stateDir, unit, s.startedMs, ["oom", "crash", "kill", "hang"], "hang")) {
      for (;;) await s.ctx.sleep(1000);
    }
    // Planted isolation-broken: a neighbour's OOM halves this instance's throughput.
    const slowed = neighbourFault(s.stateDir, unit, s.startedMs, ["oom"], "isolationBroken")
      ? 2
      : 1;
    const wait = Math.min(nextReport, o.durationS) - t;
    const stopped = await sleepWatching(s, wait * 1000, dev, SITES.stressSync);
    const now = elapsed();
    tflop += ((peak * noise() * shareOf(s, readState(s.stateDir), dev)) / slowed) * (now - t);
    t = now;
    if (t >= nextReport) {
      s.out(formatStressLine({ t, tflops: (tflop - tflopAtLast) / (t - tLast), errors }));
      tflopAtLast = tflop;
      tLast = t;
      while (nextReport <= t) nextReport += o.intervalS;
    }
    if (stopped) break;
  }
  return { tflop, t };
}
