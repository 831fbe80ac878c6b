// Runs one workload on many instances at once: all instances of a node together (spread over
// as many connections as the channel budget needs) and nodes in parallel. Each instance's
// output streams into its own log file; an instance that dies is a measured event, never a
// harness crash.
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdirSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../errors.js";
import type { StartGate, Supervisor, Transport } from "../transport/types.js";
import {
  incompleteReason,
  judgeLateExit,
  starvedAtDeadline,
  watchdogStopped,
} from "./completion.js";
import type { Instance } from "./instances.js";
import { type Metric, metricsOf, type WorkloadSpec } from "./specs.js";

export interface Measurement {
  node: string;
  gpuUuid: string;
  instanceUuid: string;
  profile: string;
  placement: string | null;
  workload: string;
  metric: string;
  value: number;
  unit: string;
  repetition: number;
}

export interface InstanceOutcome {
  instance: Instance;
  workload: string;
  repetition: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  durationMs: number;
  /** When its launch began (the phase's supervisor login included) and when it ended, on this
   * machine's clock. */
  startMs: number;
  stopMs: number;
  /** It ended other than with exit 0 (a fault, a kill, a crash): an event to judge, not an error. */
  died: boolean;
  /** The harness could not run it (connection lost, channel refused): the result is unknown. */
  harnessError: string | null;
  /** It did not run its whole duration (a signal stopped it, its figures stop early): why.
   * Never a pass, whatever its exit code and figures say. */
  incomplete: string | null;
  /** It ended in time on the node's clock, though its exit reached the controller after its
   * deadline (judgeLateExit): said so, never a failure. */
  late?: string | null;
  /** Its start and end in seconds of the node's clock (the node's record), or null when no
   * record came: whether processes sharing a device really ran at the same time. */
  nodeSpan?: { startS: number; endS: number } | null;
  /** It ran into its deadline on a node whose CPU was stalled most of that time
   * (starvedAtDeadline): the missed deadline is the machine's, the check undecided. */
  starved?: string | null;
  log: string;
  stdout: string;
  measurements: Measurement[];
  parseError: string | null;
}

export interface LaunchOptions {
  outDir: string;
  repetition?: number;
  /** Extra seconds past the workload's duration before it is killed. */
  graceS?: number;
  /** Live progress: a line of output from an instance. */
  onLine?: (instance: Instance, line: string) => void;
  signal?: AbortSignal;
  /** Start every instance's process together on the node (a start gate, waiting at most this
   * many seconds for the last): tenants sharing one device are measured sharing it. */
  startTogetherS?: number;
  /** A gate shared with another launch (an aggressor and its victims start together). */
  gate?: StartGate;
  /** The node's supervisor, shared with another launch (openSupervisor; the caller closes it):
   * launches that start together on one node share one login. Without it, each call opens its
   * own for its instances and closes it at the end. */
  supervisor?: Supervisor | null;
  /** When the phase began, if before this call (its shared supervisor's login): each outcome's
   * start, so that the login counts in the phase as a workload's own would. */
  phaseStartMs?: number;
}

/** Where workloads are started: the node's supervisor, or a channel each (`fallback` says why). */
type Launch = Pick<Supervisor, "exec" | "fallback">;

/**
 * Opens the node's supervisor (one channel, one login for all of a phase's workloads there);
 * when the node cannot run one, a launch that gives each workload its own channel and says why.
 */
export async function openSupervisor(t: Transport): Promise<Supervisor> {
  const alone = (fallback: string): Supervisor => ({
    exec: (c, opts) => t.exec(c, opts),
    close: async () => {},
    fallback,
  });
  if (!t.supervise) return alone("the transport has no node supervisor");
  try {
    return await t.supervise();
  } catch (e) {
    // A lost connection: each workload's own exec reports it as its harness error.
    return alone(`the node's supervisor could not be started: ${(e as Error).message}`);
  }
}

export function logPathFor(
  outDir: string,
  i: Instance,
  workload: string,
  repetition: number,
): string {
  const where =
    i.gpuInstanceId === null
      ? `gpu${i.gpu}`
      : `gpu${i.gpu}-gi${i.gpuInstanceId}-ci${i.computeInstanceId ?? 0}`;
  return join(outDir, i.node, `${where}.${workload}.${repetition}.log`);
}

/** Runs `spec` on each instance through `transports` (one or more connections to the node the
 * instances are on), all at once. */
export async function runOnInstances(
  transports: readonly Transport[],
  instances: readonly Instance[],
  spec: WorkloadSpec | ((i: Instance) => WorkloadSpec),
  o: LaunchOptions,
): Promise<InstanceOutcome[]> {
  const repetition = o.repetition ?? 1;
  const gate =
    o.gate ??
    (o.startTogetherS !== undefined
      ? { key: randomBytes(8).toString("hex"), count: instances.length, waitS: o.startTogetherS }
      : undefined);
  // The phase starts before its login: the supervisor's counts as the workloads' own would.
  const launchedMs = o.phaseStartMs ?? Date.now();
  // One supervisor for the node's instances (they are all of one node), unless shared.
  const own = o.supervisor || instances.length === 0 ? null : await openSupervisor(transports[0]!);
  const sup = o.supervisor ?? own;
  try {
    // Several processes on one device (tenants of a soft-partitioned GPU) each get their own log.
    return await Promise.all(
      instances.map((inst, k) => {
        const t = transports[k % transports.length]!;
        const twin = instances.findIndex((x) => x.uuid === inst.uuid) !== k;
        return runOne(
          sup && sup.fallback === null
            ? sup
            : { exec: (c, x) => t.exec(c, x), fallback: sup?.fallback ?? null },
          inst,
          typeof spec === "function" ? spec(inst) : spec,
          twin ? repetition * 100 + k : repetition,
          { ...o, launchedMs },
          gate,
        );
      }),
    );
  } finally {
    await own?.close();
  }
}

/** An instance's log file, and its lines handed on live. A full disk or a vanished folder is
 * this instance's problem (`error`), not an unhandled 'error' event that ends the controller
 * and every other node's run. */
function openLog(log: string, inst: Instance, o: LaunchOptions, fallback: string | null) {
  mkdirSync(join(o.outDir, inst.node), { recursive: true });
  const file = createWriteStream(log);
  const state = { error: null as string | null };
  file.on("error", (e: NodeJS.ErrnoException) => {
    state.error ??= `cannot write the log ${log}: ${e.code ?? e.message}; free space or choose another --out`;
  });
  // Never silently: a workload that paid a login of its own says why.
  if (fallback) file.write(`slicecheck: one login for this workload alone: ${fallback}\n`);
  let pending = "";
  const write = (chunk: string) => {
    if (state.error === null) file.write(chunk);
    if (!o.onLine) return;
    pending += chunk;
    const parts = pending.split(/\r?\n|\r/);
    pending = parts.pop() ?? "";
    for (const l of parts) if (l) o.onLine(inst, l);
  };
  const end = () =>
    new Promise<void>((r) => {
      if (state.error !== null || file.destroyed) r();
      else file.end(r);
    });
  return { write, end, state };
}

/** The outcome of a workload whose command was lost (the connection, an interrupted run):
 * broken (harnessError), never a pass, keeping the figures it printed before. */
function lostOutcome(
  base: Pick<InstanceOutcome, "instance" | "workload" | "repetition" | "log" | "startMs">,
  e: unknown,
  seenOut: string,
  parse: (out: string) => Metric[],
  measure: (m: Metric) => Measurement,
): InstanceOutcome {
  let partial: Metric[] = [];
  try {
    partial = parse(seenOut);
  } catch {
    /* a cut line: nothing to keep */
  }
  return {
    ...base,
    exitCode: null,
    signal: null,
    timedOut: false,
    durationMs: 0,
    stopMs: Date.now(),
    died: false,
    incomplete: null,
    harnessError: isSlicecheckError(e)
      ? `[${e.code}] ${e.message}`
      : e instanceof Error
        ? e.message
        : String(e),
    stdout: seenOut,
    measurements: partial.map(measure),
    parseError: null,
  };
}

async function runOne(
  t: Launch,
  inst: Instance,
  spec: WorkloadSpec,
  repetition: number,
  o: LaunchOptions & { launchedMs: number },
  gate?: StartGate,
): Promise<InstanceOutcome> {
  const log = logPathFor(o.outDir, inst, spec.name, repetition);
  const out = openLog(log, inst, o, t.fallback);
  // What the workload printed so far: an interrupted run keeps the figures already printed.
  let seenOut = "";
  const lines = out.write;
  const startMs = o.launchedMs;
  const measure = (m: Metric): Measurement => ({
    node: inst.node,
    gpuUuid: inst.gpuUuid,
    instanceUuid: inst.uuid,
    profile: inst.profile,
    placement: inst.placement,
    workload: spec.name,
    repetition,
    ...m,
  });
  const base = { instance: inst, workload: spec.name, repetition, log, startMs };
  const timeoutMs = (spec.durationS + (o.graceS ?? 30) + (gate?.waitS ?? 0)) * 1000;
  try {
    const r = await t.exec(
      { argv: [spec.program, ...spec.args] },
      {
        env: { ...spec.env, CUDA_VISIBLE_DEVICES: inst.uuid },
        timeoutMs,
        record: true,
        ...(gate ? { gate } : {}),
        onStdout: (c) => {
          seenOut += c;
          lines(c);
        },
        onStderr: lines,
        signal: o.signal,
      },
    );
    let metrics: Metric[] = [];
    let parseError: string | null = null;
    try {
      metrics = metricsOf(spec.name, r.stdout);
    } catch (e) {
      parseError = e instanceof Error ? e.message : String(e);
    }
    // The node's record starts at the gate's opening, as the controller's deadline then does
    // (command-run.ts): the gate's allowed wait is not part of either.
    const late = judgeLateExit(r, timeoutMs - (gate?.waitS ?? 0) * 1000);
    return {
      ...base,
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: late.timedOut,
      durationMs: r.durationMs,
      stopMs: Date.now(),
      died: r.exitCode !== 0,
      harnessError: out.state.error ?? late.unjudged ?? watchdogStopped(r),
      incomplete: incompleteReason(spec, { ...r, timedOut: late.timedOut }),
      late: late.late,
      starved: starvedAtDeadline(r, late.timedOut),
      nodeSpan: r.endRecord ? { startS: r.endRecord.startS, endS: r.endRecord.endS } : null,
      stdout: r.stdout,
      measurements: metrics.map(measure),
      parseError,
    };
  } catch (e) {
    return lostOutcome(base, e, seenOut, (m) => metricsOf(spec.name, m), measure);
  } finally {
    await out.end();
  }
}
