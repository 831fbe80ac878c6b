// What a finished workload step records in the history: exit, signal, deadline, the CUDA errors
// and OOM/memory-check results its output shows, its figures and the last lines of its log.
import { readFileSync } from "node:fs";
import type { InstanceOutcome } from "../workloads/launcher.js";
import { parseBuiltinOutput } from "../workloads/parsers/builtin.js";
import { parseCudaErrors } from "../workloads/parsers/cuda-errors.js";
import type { EventData } from "./history.js";

export function eventDataOf(out: InstanceOutcome, scenario: string): EventData {
  if (out.harnessError) return { scenario, harnessError: out.harnessError };
  let text = out.stdout;
  try {
    text = readFileSync(out.log, "utf8");
  } catch {
    // The log is a copy; stdout alone still has the measurements.
  }
  const metric = (m: string) => out.measurements.find((x) => x.metric === m)?.value;
  let builtin: ReturnType<typeof parseBuiltinOutput> | null = null;
  try {
    builtin = parseBuiltinOutput(text);
  } catch {
    builtin = null;
  }
  let cudaErrors: { kind: string; message: string }[] = [];
  try {
    cudaErrors = parseCudaErrors(text).map((e) => ({ kind: e.kind, message: e.message }));
  } catch {
    cudaErrors = [];
  }
  const data: EventData = {
    scenario,
    exitCode: out.exitCode,
    signal: out.signal,
    timedOut: out.timedOut,
    cudaErrors,
    tail: text.trimEnd().split("\n").slice(-4),
  };
  const tflops = metric("tflops");
  if (tflops !== undefined) data.tflops = tflops;
  const errors = metric("errors");
  if (errors !== undefined) data.errors = errors;
  if (builtin?.stress.length)
    data.samples = builtin.stress.map((x) => ({ t: x.t, tflops: x.tflops }));
  if (out.incomplete) data.incomplete = out.incomplete;
  if (out.starved) data.starved = out.starved;
  if (out.nodeSpan) data.nodeSpan = out.nodeSpan;
  if (builtin?.memhog) {
    data.oom = builtin.memhog.oom;
    data.allocatedBytes = builtin.memhog.allocatedBytes;
  }
  if (builtin?.serve.length)
    data.latencySamples = builtin.serve.map((x) => ({ t: x.t, p50Ms: x.p50Ms, p99Ms: x.p99Ms }));
  for (const [k, m] of [
    ["p50Ms", "p50_ms"],
    ["p99Ms", "p99_ms"],
    ["rps", "rps"],
  ] as const) {
    const v = metric(m);
    if (v !== undefined) data[k] = v;
  }
  if (builtin?.memhogChecks.length) data.checks = builtin.memhogChecks.map((c) => c.ok);
  return data;
}
