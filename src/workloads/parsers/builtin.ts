// The machine-readable lines of slicecheck's own workloads (workloads/*.cu) and of the
// simulator that imitates them. One format, defined here, so that the CUDA sources, the
// simulator and the parser cannot drift: the .cu files print with BUILTIN_PRINTF, the simulator
// calls the format functions, and parseBuiltinOutput reads both.
//
//   SLICECHECK stress t=<seconds, %.1f> tflops=<%.2f> errors=<uint>              every interval
//   SLICECHECK stress-final tflops=<%.2f> errors=<uint> iterations=<uint>         once, at the end
//   SLICECHECK memhog allocated_bytes=<uint> requested_bytes=<uint> oom=<0|1>     after allocating
//   SLICECHECK memhog-check bytes=<uint> ok=<0|1>                                 after each pattern check
//   SLICECHECK crasher mode=<mode> armed                                          right before faulting
//   SLICECHECK serve t=<s, %.1f> p50_ms=<%.3f> p99_ms=<%.3f> rps=<%.1f> errors=<uint>  every interval
//   SLICECHECK serve-final p50_ms=<%.3f> p99_ms=<%.3f> rps=<%.1f> errors=<uint> requests=<uint>  once, at the end
//   SLICECHECK stopped program=<name> signal=<SIGTERM|SIGINT> t=<seconds, %.1f>   last, when a signal cut the run short
//   SLICECHECK allreduce rank=<int> nranks=<int> bytes=<uint> time_us=<%.2f> algbw=<%.2f> busbw=<%.2f> wrong=<uint>
//                                                                                 once per rank, after its timed all_reduces
//
// Rules: a line starts with the tag at column 0 and ends with "\n" (printed and flushed in one
// call, so a killed process leaves only whole lines); fields are `key=value` separated by one
// space, in the order above; `errors` counts result mismatches; tflops is the achieved rate over
// the interval (stress) or the whole run (stress-final). Other output (CUDA errors, banners) may
// be interleaved and is ignored by the parser; a tagged line that breaks these rules is refused.

import { parseError } from "./text.js";

const KIND = "builtin";

export const BUILTIN_TAG = "SLICECHECK";

/**
 * Faults the crasher can be armed with; the simulator and workloads/crasher.cu use the same
 * names (test/workloads/cuda-build.test.ts checks the .cu). illegal-address: a store through a
 * wild pointer (CUDA error 700, Xid 31/13/43 by GPU); trap: a device-side __trap() (CUDA error
 * 719); hang: a kernel that never ends, stopped only by the deadline; sigkill: the process
 * SIGKILLs itself while a kernel runs.
 */
export const CRASHER_MODES = ["illegal-address", "trap", "hang", "sigkill"] as const;
export type CrasherMode = (typeof CRASHER_MODES)[number];

/** C printf formats, for the CUDA sources (`printf(BUILTIN_PRINTF.stress, t, tflops, errors)`). */
export const BUILTIN_PRINTF = {
  stress: "SLICECHECK stress t=%.1f tflops=%.2f errors=%llu\n",
  stressFinal: "SLICECHECK stress-final tflops=%.2f errors=%llu iterations=%llu\n",
  memhog: "SLICECHECK memhog allocated_bytes=%llu requested_bytes=%llu oom=%d\n",
  memhogCheck: "SLICECHECK memhog-check bytes=%llu ok=%d\n",
  crasher: "SLICECHECK crasher mode=%s armed\n",
  stopped: "SLICECHECK stopped program=%s signal=%s t=%.1f\n",
  allreduce:
    "SLICECHECK allreduce rank=%d nranks=%d bytes=%llu time_us=%.2f algbw=%.2f busbw=%.2f wrong=%llu\n",
  // serve.cu: request latency percentiles over the interval (serve) or the run (serve-final).
  serve: "SLICECHECK serve t=%.1f p50_ms=%.3f p99_ms=%.3f rps=%.1f errors=%llu\n",
  serveFinal: "SLICECHECK serve-final p50_ms=%.3f p99_ms=%.3f rps=%.1f errors=%llu requests=%llu\n",
} as const;

/** A signal stopped the workload before its duration (it then exits 128 + the signal). */
export interface Stopped {
  program: string;
  signal: string;
  /** Seconds it had run when it stopped. */
  t: number;
}

export interface StressSample {
  /** Seconds since the workload started. */
  t: number;
  tflops: number;
  errors: number;
}

export interface StressFinal {
  tflops: number;
  errors: number;
  iterations: number;
}

export interface MemhogReport {
  allocatedBytes: number;
  requestedBytes: number;
  /** The allocation stopped at an out-of-memory error (expected when it is the aggressor). */
  oom: boolean;
}

export interface MemhogCheck {
  bytes: number;
  ok: boolean;
}

/** One rank's all_reduce (workloads/allreduce.cu): mean time per all_reduce over the timed
 * iterations, algbw = bytes / time, busbw = algbw × 2(n-1)/n, and the wrong elements of a
 * checked all_reduce. */
export interface AllreduceReport {
  rank: number;
  nranks: number;
  bytes: number;
  timeUs: number;
  algbw: number;
  busbw: number;
  wrong: number;
}

/** serve: the requests of one interval (or, final, of the whole run): latency percentiles in
 * milliseconds, requests per second, wrong answers since the start. */
export interface ServeSample {
  /** Seconds since the workload started (0 in the final line, which has no time). */
  t: number;
  p50Ms: number;
  p99Ms: number;
  rps: number;
  errors: number;
}

export interface ServeFinal extends Omit<ServeSample, "t"> {
  requests: number;
}

export interface BuiltinOutput {
  stress: StressSample[];
  stressFinal: StressFinal | null;
  memhog: MemhogReport | null;
  memhogChecks: MemhogCheck[];
  /** The crasher announced its fault; null means it died before arming (or never ran). */
  crasher: { mode: CrasherMode } | null;
  stopped: Stopped | null;
  allreduce: AllreduceReport | null;
  serve: ServeSample[];
  serveFinal: ServeFinal | null;
}

function uint(value: number, name: string): string {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${name} must be a non-negative integer`);
  return String(value);
}

function fixed(value: number, digits: number, name: string): string {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`${name} must be a finite non-negative number`);
  return value.toFixed(digits);
}

export function formatStressLine(s: StressSample): string {
  return `${BUILTIN_TAG} stress t=${fixed(s.t, 1, "t")} tflops=${fixed(s.tflops, 2, "tflops")} errors=${uint(s.errors, "errors")}`;
}

export function formatStressFinalLine(f: StressFinal): string {
  return `${BUILTIN_TAG} stress-final tflops=${fixed(f.tflops, 2, "tflops")} errors=${uint(f.errors, "errors")} iterations=${uint(f.iterations, "iterations")}`;
}

export function formatMemhogLine(m: MemhogReport): string {
  return `${BUILTIN_TAG} memhog allocated_bytes=${uint(m.allocatedBytes, "allocatedBytes")} requested_bytes=${uint(m.requestedBytes, "requestedBytes")} oom=${m.oom ? 1 : 0}`;
}

export function formatMemhogCheckLine(c: MemhogCheck): string {
  return `${BUILTIN_TAG} memhog-check bytes=${uint(c.bytes, "bytes")} ok=${c.ok ? 1 : 0}`;
}

export function formatStoppedLine(s: Stopped): string {
  if (!/^[a-z-]+$/.test(s.program) || !/^SIG[A-Z]+$/.test(s.signal))
    throw new RangeError("program and signal must be plain names");
  return `${BUILTIN_TAG} stopped program=${s.program} signal=${s.signal} t=${fixed(s.t, 1, "t")}`;
}

export function formatAllreduceLine(a: AllreduceReport): string {
  return `${BUILTIN_TAG} allreduce rank=${uint(a.rank, "rank")} nranks=${uint(a.nranks, "nranks")} bytes=${uint(a.bytes, "bytes")} time_us=${fixed(a.timeUs, 2, "timeUs")} algbw=${fixed(a.algbw, 2, "algbw")} busbw=${fixed(a.busbw, 2, "busbw")} wrong=${uint(a.wrong, "wrong")}`;
}

export function formatServeLine(s: ServeSample): string {
  return `${BUILTIN_TAG} serve t=${fixed(s.t, 1, "t")} p50_ms=${fixed(s.p50Ms, 3, "p50Ms")} p99_ms=${fixed(s.p99Ms, 3, "p99Ms")} rps=${fixed(s.rps, 1, "rps")} errors=${uint(s.errors, "errors")}`;
}

export function formatServeFinalLine(f: ServeFinal): string {
  return `${BUILTIN_TAG} serve-final p50_ms=${fixed(f.p50Ms, 3, "p50Ms")} p99_ms=${fixed(f.p99Ms, 3, "p99Ms")} rps=${fixed(f.rps, 1, "rps")} errors=${uint(f.errors, "errors")} requests=${uint(f.requests, "requests")}`;
}

export function formatCrasherArmedLine(mode: CrasherMode): string {
  return `${BUILTIN_TAG} crasher mode=${mode} armed`;
}

const DECIMAL = "\\d+(?:\\.\\d+)?";
const UINT = "\\d+";
const FLAG = "[01]";
const LINES = {
  stress: new RegExp(`^stress t=(${DECIMAL}) tflops=(${DECIMAL}) errors=(${UINT})$`),
  "stress-final": new RegExp(
    `^stress-final tflops=(${DECIMAL}) errors=(${UINT}) iterations=(${UINT})$`,
  ),
  memhog: new RegExp(`^memhog allocated_bytes=(${UINT}) requested_bytes=(${UINT}) oom=(${FLAG})$`),
  "memhog-check": new RegExp(`^memhog-check bytes=(${UINT}) ok=(${FLAG})$`),
  crasher: /^crasher mode=(\S+) armed$/,
  stopped: new RegExp(`^stopped program=([a-z-]+) signal=(SIG[A-Z]+) t=(${DECIMAL})$`),
  allreduce: new RegExp(
    `^allreduce rank=(${UINT}) nranks=(${UINT}) bytes=(${UINT}) time_us=(${DECIMAL}) algbw=(${DECIMAL}) busbw=(${DECIMAL}) wrong=(${UINT})$`,
  ),
  serve: new RegExp(
    `^serve t=(${DECIMAL}) p50_ms=(${DECIMAL}) p99_ms=(${DECIMAL}) rps=(${DECIMAL}) errors=(${UINT})$`,
  ),
  "serve-final": new RegExp(
    `^serve-final p50_ms=(${DECIMAL}) p99_ms=(${DECIMAL}) rps=(${DECIMAL}) errors=(${UINT}) requests=(${UINT})$`,
  ),
} as const;
type LineName = keyof typeof LINES;

const EXPECTED: Record<LineName, string> = {
  stress: "'stress t=<s> tflops=<x> errors=<n>'",
  "stress-final": "'stress-final tflops=<x> errors=<n> iterations=<n>'",
  memhog: "'memhog allocated_bytes=<n> requested_bytes=<n> oom=0|1'",
  "memhog-check": "'memhog-check bytes=<n> ok=0|1'",
  crasher: `'crasher mode=<${CRASHER_MODES.join("|")}> armed'`,
  stopped: "'stopped program=<name> signal=<SIGTERM|SIGINT> t=<s>'",
  allreduce: "'allreduce rank=<n> nranks=<n> bytes=<n> time_us=<x> algbw=<x> busbw=<x> wrong=<n>'",
  serve: "'serve t=<s> p50_ms=<ms> p99_ms=<ms> rps=<x> errors=<n>'",
  "serve-final": "'serve-final p50_ms=<ms> p99_ms=<ms> rps=<x> errors=<n> requests=<n>'",
};

function isRecord(name: string): name is LineName {
  return Object.hasOwn(LINES, name);
}

/** Reads every SLICECHECK line of a workload's output (stdout and stderr together are fine). */
export function parseBuiltinOutput(text: string): BuiltinOutput {
  const out: BuiltinOutput = {
    stress: [],
    stressFinal: null,
    memhog: null,
    memhogChecks: [],
    crasher: null,
    stopped: null,
    allreduce: null,
    serve: [],
    serveFinal: null,
  };
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!line.startsWith(BUILTIN_TAG)) continue;
    const lineNo = index + 1;
    const body = line.slice(BUILTIN_TAG.length + 1);
    const name = body.split(" ", 1)[0] ?? "";
    if (line[BUILTIN_TAG.length] !== " " || !isRecord(name)) {
      throw parseError(KIND, lineNo, `'${BUILTIN_TAG} ${Object.keys(LINES).join("|")} ...'`, line);
    }
    const m = LINES[name].exec(body);
    if (!m) throw parseError(KIND, lineNo, `'${BUILTIN_TAG} ' + ${EXPECTED[name]}`, line);
    // A once-per-run line seen twice means two processes share one stream: the launcher's bug.
    const once = (present: unknown) => {
      if (present !== null) throw parseError(KIND, lineNo, `one '${name}' line per process`, line);
    };
    const n = (k: number) => Number(m[k]);
    switch (name) {
      case "stress":
        out.stress.push({ t: n(1), tflops: n(2), errors: n(3) });
        break;
      case "stress-final":
        once(out.stressFinal);
        out.stressFinal = { tflops: n(1), errors: n(2), iterations: n(3) };
        break;
      case "memhog":
        once(out.memhog);
        out.memhog = { allocatedBytes: n(1), requestedBytes: n(2), oom: m[3] === "1" };
        break;
      case "memhog-check":
        out.memhogChecks.push({ bytes: n(1), ok: m[2] === "1" });
        break;
      case "stopped":
        once(out.stopped);
        out.stopped = { program: m[1]!, signal: m[2]!, t: n(3) };
        break;
      case "allreduce":
        once(out.allreduce);
        out.allreduce = {
          rank: n(1),
          nranks: n(2),
          bytes: n(3),
          timeUs: n(4),
          algbw: n(5),
          busbw: n(6),
          wrong: n(7),
        };
        break;
      case "serve":
        out.serve.push({ t: n(1), p50Ms: n(2), p99Ms: n(3), rps: n(4), errors: n(5) });
        break;
      case "serve-final":
        once(out.serveFinal);
        out.serveFinal = { p50Ms: n(1), p99Ms: n(2), rps: n(3), errors: n(4), requests: n(5) };
        break;
      case "crasher": {
        once(out.crasher);
        const mode = CRASHER_MODES.find((c) => c === m[1]);
        if (mode === undefined) throw parseError(KIND, lineNo, EXPECTED.crasher, line);
        out.crasher = { mode };
        break;
      }
    }
  }
  return out;
}
