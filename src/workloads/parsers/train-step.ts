// The machine-readable lines of the built-in train-step workload (workloads/train-step.cu) and
// of the simulator that imitates it: one format, defined here, as builtin.ts does for the others
// (test/workloads/train-step.test.ts checks the .cu's SC_FMT_TRAIN* against TRAIN_PRINTF).
//
//   SLICECHECK train step=<uint> step_ms=<%.3f> compute_ms=<%.3f> allreduce_ms=<%.3f>   every step
//   SLICECHECK train-final steps=<uint> ranks=<uint> mean_step_ms=<%.3f> p50_step_ms=<%.3f> steps_per_s=<%.3f> errors=<uint>
//   SLICECHECK train-no-nccl reason=<text to the end of the line>                     NCCL could not be loaded (exit 4)
//   SLICECHECK stopped program=train-step signal=<SIG...> t=<%.1f>                    a signal cut the run short
//
// step_ms = compute_ms (the three GEMMs on every rank) + allreduce_ms (the sum of the gradient
// over the ranks), host wall time, the result check not counted; `errors` counts wrong results
// since the start; `ranks` is the number of devices in the all_reduce (1 on a MIG instance: a
// 1-rank collective, timed but moving no data between GPUs). The same rules as builtin.ts: a
// tagged line that breaks its format is refused; untagged output is ignored.

import { BUILTIN_TAG, type Stopped } from "./builtin.js";
import { parseError, splitLines } from "./text.js";

const KIND = "train-step";

/** train-step's exit when it could not load NCCL (SC_EXIT_NO_NCCL of workloads/nccl_dl.cuh). */
export const TRAIN_EXIT_NO_NCCL = 4;

/** C printf formats, byte for byte those of workloads/slicecheck.cuh (SC_FMT_TRAIN*). */
export const TRAIN_PRINTF = {
  train: "SLICECHECK train step=%llu step_ms=%.3f compute_ms=%.3f allreduce_ms=%.3f\n",
  trainFinal:
    "SLICECHECK train-final steps=%llu ranks=%d mean_step_ms=%.3f p50_step_ms=%.3f steps_per_s=%.3f errors=%llu\n",
  trainNoNccl: "SLICECHECK train-no-nccl reason=%s\n",
} as const;

export interface TrainStep {
  step: number;
  stepMs: number;
  computeMs: number;
  allreduceMs: number;
}

export interface TrainFinal {
  steps: number;
  ranks: number;
  meanStepMs: number;
  p50StepMs: number;
  stepsPerS: number;
  errors: number;
}

export interface TrainStepOutput {
  steps: TrainStep[];
  final: TrainFinal | null;
  /** Why NCCL could not be loaded: nothing was measured. */
  noNccl: string | null;
  stopped: Stopped | null;
}

function fixed(value: number, name: string): string {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${name} must be a finite non-negative number`);
  return value.toFixed(3);
}

function uint(value: number, name: string): string {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer`);
  return String(value);
}

export function formatTrainLine(s: TrainStep): string {
  return `${BUILTIN_TAG} train step=${uint(s.step, "step")} step_ms=${fixed(s.stepMs, "stepMs")} compute_ms=${fixed(s.computeMs, "computeMs")} allreduce_ms=${fixed(s.allreduceMs, "allreduceMs")}`;
}

export function formatTrainFinalLine(f: TrainFinal): string {
  return `${BUILTIN_TAG} train-final steps=${uint(f.steps, "steps")} ranks=${uint(f.ranks, "ranks")} mean_step_ms=${fixed(f.meanStepMs, "meanStepMs")} p50_step_ms=${fixed(f.p50StepMs, "p50StepMs")} steps_per_s=${fixed(f.stepsPerS, "stepsPerS")} errors=${uint(f.errors, "errors")}`;
}

export function formatTrainNoNcclLine(reason: string): string {
  return `${BUILTIN_TAG} train-no-nccl reason=${reason.replace(/[\r\n]+/g, " ")}`;
}

const D = "(\\d+(?:\\.\\d+)?)";
const U = "(\\d+)";
const LINES = {
  train: new RegExp(`^train step=${U} step_ms=${D} compute_ms=${D} allreduce_ms=${D}$`),
  "train-final": new RegExp(
    `^train-final steps=${U} ranks=${U} mean_step_ms=${D} p50_step_ms=${D} steps_per_s=${D} errors=${U}$`,
  ),
  "train-no-nccl": /^train-no-nccl reason=(.+)$/,
  stopped: new RegExp(`^stopped program=([a-z-]+) signal=(SIG[A-Z]+) t=${D}$`),
} as const;
type LineName = keyof typeof LINES;

const isLine = (name: string): name is LineName => Object.hasOwn(LINES, name);

/** Reads every SLICECHECK line of train-step's output (stdout and stderr together are fine). */
export function parseTrainStepOutput(text: string): TrainStepOutput {
  const out: TrainStepOutput = { steps: [], final: null, noNccl: null, stopped: null };
  for (const [index, line] of splitLines(text).entries()) {
    if (!line.startsWith(BUILTIN_TAG)) continue;
    const lineNo = index + 1;
    const body = line.slice(BUILTIN_TAG.length + 1);
    const name = body.split(" ", 1)[0] ?? "";
    if (line[BUILTIN_TAG.length] !== " " || !isLine(name))
      throw parseError(KIND, lineNo, `'${BUILTIN_TAG} ${Object.keys(LINES).join("|")} ...'`, line);
    const m = LINES[name].exec(body);
    if (!m) throw parseError(KIND, lineNo, `'${BUILTIN_TAG} ${name} ...' as train-step.ts`, line);
    const once = (present: unknown) => {
      if (present !== null) throw parseError(KIND, lineNo, `one '${name}' line per process`, line);
    };
    const n = (k: number) => Number(m[k]);
    if (name === "train") {
      out.steps.push({ step: n(1), stepMs: n(2), computeMs: n(3), allreduceMs: n(4) });
    } else if (name === "train-final") {
      once(out.final);
      out.final = {
        steps: n(1),
        ranks: n(2),
        meanStepMs: n(3),
        p50StepMs: n(4),
        stepsPerS: n(5),
        errors: n(6),
      };
    } else if (name === "train-no-nccl") {
      once(out.noNccl);
      out.noNccl = m[1]!;
    } else {
      once(out.stopped);
      out.stopped = { program: m[1]!, signal: m[2]!, t: n(3) };
    }
  }
  return out;
}

export interface TrainMetric {
  metric: string;
  value: number;
  unit: string;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The measurements: step_ms (mean, ms: higher is worse, so `diff` flags a slow-down), its
 * median and halves, steps per second, wrong results, and the ranks of the all_reduce. Killed
 * before its final line, the steps it reported still give the times (and no error count: it is
 * unknown, so it is left out rather than read as zero).
 */
export function trainStepMetrics(o: TrainStepOutput): TrainMetric[] {
  const out: TrainMetric[] = [];
  const s = o.steps;
  if (o.final) {
    out.push({ metric: "step_ms", value: o.final.meanStepMs, unit: "ms" });
    out.push({ metric: "step_p50_ms", value: o.final.p50StepMs, unit: "ms" });
  } else if (s.length > 0) {
    out.push({ metric: "step_ms", value: mean(s.map((x) => x.stepMs)), unit: "ms" });
  }
  if (s.length > 0) {
    out.push({ metric: "compute_ms", value: mean(s.map((x) => x.computeMs)), unit: "ms" });
    out.push({ metric: "allreduce_ms", value: mean(s.map((x) => x.allreduceMs)), unit: "ms" });
  }
  if (o.final) {
    out.push({ metric: "steps_per_s", value: o.final.stepsPerS, unit: "steps/s" });
    out.push({ metric: "errors", value: o.final.errors, unit: "count" });
    out.push({ metric: "ranks", value: o.final.ranks, unit: "ranks" });
  }
  return out;
}
