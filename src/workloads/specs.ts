// What each workload is on the node (its argv) and what its output measures. Parsing is done
// by the pure parsers; this module turns their results into measurements.
import { parseBuiltinOutput } from "./parsers/builtin.js";
import { parseGpuBurn } from "./parsers/gpu-burn.js";
import { parseNcclTests } from "./parsers/nccl-tests.js";
import { parseTrainStepOutput, trainStepMetrics } from "./parsers/train-step.js";

export type WorkloadName =
  | "stress"
  | "memhog"
  | "crasher"
  | "gpu-burn"
  | "nccl"
  // issue 22: the training suite's step.
  | "train-step"
  // serve: issue 22 item 3 (latency)
  | "serve";

export interface Metric {
  metric: string;
  value: number;
  unit: string;
}

export interface WorkloadSpec {
  name: WorkloadName;
  /** The program on the node (resolved by the launcher for the built-ins). */
  program: string;
  args: string[];
  /** Seconds the workload is meant to run; the deadline adds a margin to it. */
  durationS: number;
  /** More environment for the process (an MPS client's limits), besides CUDA_VISIBLE_DEVICES. */
  env?: Record<string, string>;
}

export const BUILTIN_PROGRAMS = {
  stress: "slicecheck-stress",
  memhog: "slicecheck-memhog",
  crasher: "slicecheck-crasher",
  "train-step": "slicecheck-train-step",
  serve: "slicecheck-serve",
} as const;

/** How long past its duration a stress (or serve), which ends on its own, may run before it is
 * taken for hung and killed: a fifth more, 10 s at least (harness/context.ts says why). */
export const stressGraceS = (durationS: number): number => Math.max(10, durationS * 0.2);

export function stressSpec(
  durationS: number,
  intervalS = Math.max(0.2, Math.min(5, durationS / 5)),
): WorkloadSpec {
  return {
    name: "stress",
    program: BUILTIN_PROGRAMS.stress,
    args: ["--duration", String(durationS), "--interval", String(intervalS)],
    durationS,
  };
}

/** train-step for `durationS` (steps of the default size, from the device memory). */
export function trainStepSpec(durationS: number): WorkloadSpec {
  return {
    name: "train-step",
    program: BUILTIN_PROGRAMS["train-step"],
    args: ["--duration", String(durationS)],
    durationS,
  };
}

/** serve.cu: small batched GEMM requests, one at a time, for the latency percentiles. */
export function serveSpec(
  durationS: number,
  intervalS = Math.max(0.2, Math.min(5, durationS / 5)),
): WorkloadSpec {
  return {
    name: "serve",
    program: BUILTIN_PROGRAMS.serve,
    args: ["--duration", String(durationS), "--interval", String(intervalS)],
    durationS,
  };
}

/** serve's figures: the final line's, or (killed before it) the intervals' median p50, worst
 * p99 and mean rate, so that a cut-short run never reads better than its intervals did. */
function serveMetrics(stdout: string): Metric[] {
  const b = parseBuiltinOutput(stdout);
  const f = b.serveFinal;
  const xs = b.serve;
  if (!f && xs.length === 0) return [];
  const p50 = f ? f.p50Ms : [...xs.map((x) => x.p50Ms)].sort((a, c) => a - c)[xs.length >> 1]!;
  const p99 = f ? f.p99Ms : Math.max(...xs.map((x) => x.p99Ms));
  const rps = f ? f.rps : xs.reduce((a, x) => a + x.rps, 0) / xs.length;
  const errors = f ? f.errors : Math.max(...xs.map((x) => x.errors));
  return [
    { metric: "p50_ms", value: p50, unit: "ms" },
    { metric: "p99_ms", value: p99, unit: "ms" },
    { metric: "rps", value: rps, unit: "req/s" },
    { metric: "errors", value: errors, unit: "count" },
  ];
}

export function gpuBurnSpec(durationS: number): WorkloadSpec {
  // -m 90%: leave room for the CUDA context; -tc: tensor cores where the GPU has them.
  return {
    name: "gpu-burn",
    program: "gpu_burn",
    args: ["-m", "90%", "-tc", String(Math.ceil(durationS))],
    durationS,
  };
}

export function ncclSpec(): WorkloadSpec {
  // One rank per MIG instance (-g 1): bus bandwidth is 0 by definition, so time and algbw count.
  return {
    name: "nccl",
    program: "all_reduce_perf",
    args: ["-b", "8", "-e", "128M", "-f", "2", "-g", "1"],
    durationS: 60,
  };
}

/** Measurements from a workload's complete output; an empty list when it printed none. */
export function metricsOf(name: WorkloadName, stdout: string): Metric[] {
  switch (name) {
    case "stress":
    case "memhog":
    case "crasher": {
      const b = parseBuiltinOutput(stdout);
      const out: Metric[] = [];
      if (b.stressFinal) {
        out.push({ metric: "tflops", value: b.stressFinal.tflops, unit: "TFLOP/s" });
        out.push({ metric: "errors", value: b.stressFinal.errors, unit: "count" });
      } else if (b.stress.length > 0) {
        // Killed before its final line: the mean of the intervals it reported.
        const mean = b.stress.reduce((a, s) => a + s.tflops, 0) / b.stress.length;
        out.push({ metric: "tflops", value: mean, unit: "TFLOP/s" });
        out.push({
          metric: "errors",
          value: b.stress.reduce((a, s) => a + s.errors, 0),
          unit: "count",
        });
      }
      if (b.memhog)
        out.push({ metric: "allocated", value: b.memhog.allocatedBytes, unit: "bytes" });
      return out;
    }
    case "train-step":
      return trainStepMetrics(parseTrainStepOutput(stdout));
    case "serve":
      return serveMetrics(stdout);
    case "gpu-burn": {
      const r = parseGpuBurn(stdout);
      const g = r.progress?.gflops ?? [];
      const out: Metric[] = g.length
        ? [{ metric: "gflops", value: g.reduce((a, x) => a + x, 0) / g.length, unit: "GFLOP/s" }]
        : [];
      out.push({
        metric: "faulty",
        value: r.gpus.filter((x) => x.status === "FAULTY").length,
        unit: "count",
      });
      return out;
    }
    case "nccl": {
      const r = parseNcclTests(stdout);
      const last = r.rows[r.rows.length - 1];
      if (!last) return [];
      const wrong = r.rows.reduce(
        (a, x) => a + (x.outOfPlace.wrong ?? 0) + (x.inPlace.wrong ?? 0),
        0,
      );
      return [
        { metric: "algbw", value: last.outOfPlace.algbw, unit: "GB/s" },
        { metric: "time", value: last.outOfPlace.timeUs, unit: "us" },
        { metric: "wrong", value: wrong, unit: "count" },
      ];
    }
  }
}
