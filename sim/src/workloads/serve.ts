#!/usr/bin/env node
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

import { formatServeFinalLine, formatServeLine } from "../../../src/workloads/parsers/builtin.js";
import { readState } from "../nvsmi/state.js";
import { CONTEXT_MIB } from "./admit.js";
import { neighbourFault, readChaos } from "./chaos.js";
import { SITES } from "./cuda.js";
import { eachOption, parseDouble, usageError } from "./flags.js";
import { noiseSource, profileOfDevice, regressionFactor, smRates } from "./model.js";
import { serveFigures } from "./serve-model.js";
import {
  finish,
  finishIfStopped,
  joinDevice,
  openDevice,
  openSession,
  shareOf,
  sleepWatching,
} from "./session.js";

const PROGRAM = "serve";
const USAGE =
  "usage: serve [--duration S] [--interval S] [--plant-error]\n" +
  "  --duration S    run for S seconds (default 10)\n" +
  "  --interval S    print a progress line every S seconds (default 1)\n" +
  "  --plant-error   corrupt one answer on purpose, to prove the check can fail\n";

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
// serve.cu's matrices are a few tens of MiB at most (35 MiB on a whole H100: 264 matrices of
// 128 x 128 floats, twice): counted within the context's assumed size, as stress's counter is.
await joinDevice(s, dev, CONTEXT_MIB);

// A driver regression planted with `sim upgrade-driver --regress PROFILE:p99_ms=F` scales p99.
const profile = profileOfDevice(dev.name);
const driverTail = regressionFactor(s.stateDir, profile, "p99_ms");
const fp32PerSm = smRates(dev.product, dev.architecture).fp32;
const noise = noiseSource(s.pid);
const errors = plantError ? 1 : 0;
const unit = { gpu: dev.gpu.index, gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };

/** The planted latency leak: this unit's p99 rises once a neighbour ran out of memory. */
function leakFactor(): number {
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

const t0 = Date.now();
const elapsed = () => (Date.now() - t0) / 1000;
const all = { requests: 0, p50: [] as number[], p99: [] as number[] };
let t = 0;

let nextReport = intervalS;
while (!s.stopping && t < durationS) {
  const wait = Math.min(nextReport, durationS) - t;
  const stopped = await sleepWatching(s, wait * 1000, dev, SITES.serveSync);
  const now = elapsed();
  const f = serveFigures({
    fp32PerSm,
    memoryMiB: dev.memoryMiB,
    share: shareOf(readState(s.stateDir), dev),
    tailFactor: driverTail * leakFactor(),
  });
  const k = noise();
  const sample = { p50Ms: f.p50Ms * k, p99Ms: f.p99Ms * k, rps: f.rps / k };
  all.requests += Math.round(sample.rps * (now - t));
  all.p50.push(sample.p50Ms);
  all.p99.push(sample.p99Ms);
  t = now;
  if (t >= nextReport) {
    s.out(formatServeLine({ t, ...sample, errors }));

    while (nextReport <= t) nextReport += intervalS;
  }
  if (stopped) break;
}

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
