// The simulated `slicecheck-serve` (workloads/serve.cu): the device header, a `SLICECHECK serve`
// line every --interval seconds (p50/p99 latency and requests/s of that interval, errors since
// the start) and a `serve-final` line over the run. SIGTERM/SIGINT end it early with the final
// line, then a `stopped` line and exit 128 + the signal. Exit 0, or 1 when answers were wrong
// (--plant-error), 2 on a CUDA error, 3 on bad usage.
//
// The figures come from serve-model.ts, re-read at every line from the process's share of its
// compute unit (session.ts shareOf): MIG instances never see each other, time-sliced and MPS
// processes wait behind their neighbours. A planted `sim fault serve-slow` raises the p99 of the
// instance it names once a neighbour runs out of memory (a latency leak MIG must not have).

import {
  formatServeFinalLine,
  formatServeLine,
} from "../../../../src/workloads/parsers/builtin.js";
import { readState } from "../../nvsmi/state.js";
import { CONTEXT_MIB } from "../admit.js";
import { neighbourFault, readChaos } from "../chaos.js";
import type { ProgramCtx } from "../ctx.js";
import { SITES } from "../cuda.js";
import type { SimDevice } from "../device.js";
import { type RunOptions, runOptions } from "../flags.js";
import { noiseSource, profileOfDevice, regressionFactor, smRates } from "../model.js";
import { serveFigures } from "../serve-model.js";
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

const PROGRAM = "serve";
const USAGE =
  "usage: serve [--duration S] [--interval S] [--plant-error]\n" +
  "  --duration S    run for S seconds (default 10)\n" +
  "  --interval S    print a progress line every S seconds (default 1)\n" +
  "  --plant-error   corrupt one answer on purpose, to prove the check can fail\n";

type Unit = { gpu: number; gi: number | null; ci: number | null };

/** The planted latency leak: this unit's p99 rises once a neighbour ran out of memory. */
function leakFactor(s: Session, unit: Unit): number {
  const leak = readChaos(s.stateDir).serveSlow;
  if (!leak || leak.gpu !== unit.gpu || (leak.gi !== null && leak.gi !== unit.gi)) return 1;
  // On a whole GPU (time-slicing, MPS) every unit is the same one: any other process's OOM is a
  // neighbour's, since this process is the serve.
  const whole = unit.gi === null;
  const hit = whole
    ? (readChaos(s.stateDir).events ?? []).some(
        (e) =>
          e.gpu === unit.gpu &&
          e.kind === "oom" &&
          (e.untilMs ?? e.atMs) >= s.startedMs &&
          e.atMs <= Date.now(),
      )
    : neighbourFault(s.stateDir, unit, s.startedMs, ["oom"], "serveSlow");
  return hit ? leak.factor : 1;
}

export async function serve(ctx: ProgramCtx): Promise<void> {
  const o = runOptions(ctx, PROGRAM, USAGE);
  const s = openSession(ctx, PROGRAM, true);
  const dev = await openDevice(s);
  // serve.cu's matrices are a few tens of MiB at most (35 MiB on a whole H100: 264 matrices of
  // 128 x 128 floats, twice): counted within the context's assumed size, as stress's counter is.
  await joinDevice(s, dev, CONTEXT_MIB);
  const errors = o.plantError ? 1 : 0;
  const { all, t } = await measure(s, dev, o, errors);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;
  s.out(
    formatServeFinalLine({
      p50Ms: median(all.p50),
      // The run's p99 is at least its worst interval's: a tail that came and went stays in it.
      p99Ms: Math.max(0, ...all.p99),
      rps: t > 0 ? all.requests / t : 0,
      errors,
      requests: Math.max(1, all.requests),
    }),
  );
  await finishIfStopped(s, t);
  await finish(s, errors === 0 ? 0 : 1);
}

/** The run's loop: a line every interval until the duration or a graceful signal. */
async function measure(s: Session, dev: SimDevice, o: RunOptions, errors: number) {
  // A driver regression planted with `sim upgrade-driver --regress PROFILE:p99_ms=F` scales p99.
  const driverTail = regressionFactor(s.stateDir, profileOfDevice(dev.name), "p99_ms");
  const fp32PerSm = smRates(dev.product, dev.architecture).fp32;
  const noise = noiseSource(s.pid);
  const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
  const t0 = Date.now();
  const elapsed = () => (Date.now() - t0) / 1000;
  const all = { requests: 0, p50: [] as number[], p99: [] as number[] };
  let t = 0;
  let nextReport = o.intervalS;
  while (!s.stopping && t < o.durationS) {
    const wait = Math.min(nextReport, o.durationS) - t;
    const stopped = await sleepWatching(s, wait * 1000, dev, SITES.serveSync);
    const now = elapsed();
    const f = serveFigures({
      fp32PerSm,
      memoryMiB: dev.memoryMiB,
      share: shareOf(s, readState(s.stateDir), dev),
      tailFactor: driverTail * leakFactor(s, unit),
    });
    const k = noise();
    const sample = { p50Ms: f.p50Ms * k, p99Ms: f.p99Ms * k, rps: f.rps / k };
    all.requests += Math.round(sample.rps * (now - t));
    all.p50.push(sample.p50Ms);
    all.p99.push(sample.p99Ms);
    t = now;
    if (t >= nextReport) {
      s.out(formatServeLine({ t, ...sample, errors }));
      while (nextReport <= t) nextReport += o.intervalS;
    }
    if (stopped) break;
  }
  return { all, t };
}
