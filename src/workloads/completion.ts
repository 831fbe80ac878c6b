// Did a workload run its whole duration? A stress that a signal stopped after 3 s of 30 (the
// node's watchdog, an operator, another tool's SIGTERM) prints its final line and a believable
// rate, so neither its exit code alone (old binaries exit 0 on SIGTERM) nor its figures alone
// tell. Pure: the outcome and the output in, the reason it is incomplete (or null) out.
import { constants } from "node:os";
import { HEARTBEAT_TIMEOUT_S, WATCHDOG_SIGNAL } from "../transport/remote-scripts.js";
import { parseBuiltinOutput } from "./parsers/builtin.js";
import type { WorkloadSpec } from "./specs.js";

/** Slack for the last interval line: timers on a loaded node fire a little late, never early. */
const SPAN_SLACK_S = 0.25;

function signalName(exitCode: number | null, signal: string | null): string | null {
  if (signal) return signal.startsWith("SIG") ? signal : `SIG${signal}`;
  if (exitCode !== null && exitCode > 128 && exitCode < 128 + 65) {
    const n = exitCode - 128;
    const name = Object.entries(constants.signals).find(([, v]) => v === n)?.[0];
    return name ?? `signal ${n}`;
  }
  return null;
}

/**
 * Set when the node's own watchdog stopped the workload (it died of SIGHUP, which only the
 * watchdog sends): the controller's heartbeats had stopped for HEARTBEAT_TIMEOUT_S (a stalled
 * connection, a frozen controller), so the run was disturbed and the check cannot be decided.
 */
export function watchdogStopped(r: {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
}): string | null {
  let stopped: string | null = null;
  try {
    stopped = parseBuiltinOutput(r.stdout).stopped?.signal ?? null;
  } catch {
    /* not a built-in workload's output */
  }
  const sig = stopped ?? signalName(r.exitCode, r.signal);
  if (sig !== `SIG${WATCHDOG_SIGNAL}`) return null;
  return `stopped by the node's watchdog (${sig}): the controller's heartbeats did not reach the node for ${HEARTBEAT_TIMEOUT_S} s (a stalled connection or controller), so this measurement was disturbed and decides nothing`;
}

/**
 * Why the workload did not run its whole duration, or null when it did (or when it has no
 * duration to check). A deadline kill is reported by the caller as a timeout, not here.
 */
export function incompleteReason(
  spec: WorkloadSpec,
  r: { exitCode: number | null; signal: string | null; timedOut: boolean; stdout: string },
): string | null {
  if (r.timedOut) return null;
  if (spec.name !== "stress" && spec.name !== "memhog" && spec.name !== "serve") {
    const sig = signalName(r.exitCode, r.signal);
    return sig && spec.name !== "crasher" ? `killed by ${sig}` : null;
  }
  let out: ReturnType<typeof parseBuiltinOutput>;
  try {
    out = parseBuiltinOutput(r.stdout);
  } catch {
    return null; // the parse error is reported as such
  }
  if (out.stopped) {
    return `stopped by ${out.stopped.signal} after ${out.stopped.t.toFixed(1)} s of ${spec.durationS} s`;
  }
  const sig = signalName(r.exitCode, r.signal);
  if (sig) return `killed by ${sig} before its end`;
  if (spec.name === "memhog" || r.exitCode !== 0) return null;
  if (!(spec.name === "serve" ? out.serveFinal : out.stressFinal))
    return "ended without its final line";
  // The figures must span the duration: the last interval line is at most one interval early.
  const ts = (spec.name === "serve" ? out.serve : out.stress).map((s) => s.t);
  const last = ts.at(-1);
  if (last === undefined) return `printed no progress line in ${spec.durationS} s`;
  let gap = ts[0]!;
  for (let i = 1; i < ts.length; i++) gap = Math.max(gap, ts[i]! - ts[i - 1]!);
  if (last + gap + SPAN_SLACK_S < spec.durationS) {
    return `its figures span ${last.toFixed(1)} s of ${spec.durationS} s`;
  }
  return null;
}

/** How a workload's end is judged once the controller's deadline has fired. */
export interface LateJudgement {
  /** It ran past its deadline on the node's own clock (a failed check, as before). */
  timedOut: boolean;
  /** Its end cannot be told: the check is undecided (broken), whatever its exit said. */
  unjudged: string | null;
  /** It ended in time on the node, and only its exit reached the controller late: said so. */
  late: string | null;
}

/**
 * The controller's deadline fired before the workload's exit reached it. The controller's own
 * clock says nothing about the node then (a stalled session, a paused controller, a slow
 * network delay the exit, not the workload), so the node decides: our kill finding the workload
 * still running, or an end it recorded past the deadline, is a deadline missed on the node; an
 * end recorded within it is an end in time, judged by its exit status; with neither, the check
 * is undecided. Never failed because the controller was slow.
 */
export function judgeLateExit(
  r: {
    timedOut: boolean;
    endRecord?: { exitCode: number; elapsedMs: number } | null;
    aliveAtKill?: boolean | null;
  },
  deadlineMs: number,
): LateJudgement {
  if (!r.timedOut) return { timedOut: false, unjudged: null, late: null };
  // Our kill found it running: it had not ended when the deadline fired, whatever the record's
  // span says. The record's clock starts at the recorder, after the login chain that the
  // controller's deadline already counts (seconds on a loaded node), so a command our TERM
  // ended can read as "ended in time" and be judged by its exit 143 as a failure of its own,
  // out of reach of the starvation check (a 64-node fleet bench on 2 cores, December 2026).
  if (r.aliveAtKill === true) return { timedOut: true, unjudged: null, late: null };
  const rec = r.endRecord;
  if (rec) {
    if (rec.elapsedMs > deadlineMs) return { timedOut: true, unjudged: null, late: null };
    return {
      timedOut: false,
      unjudged: null,
      late: `its exit reached the controller after its ${fmtS(deadlineMs)} s deadline, but the node recorded its end (exit ${rec.exitCode}) after ${fmtS(rec.elapsedMs)} s: judged by the node's record`,
    };
  }
  return {
    timedOut: false,
    unjudged: `its exit reached the controller after its ${fmtS(deadlineMs)} s deadline and the node's record of its end could not be read, so whether it ended in time is unknown`,
    late: null,
  };
}

/** The share of a command's time the node's CPU must have been stalled (PSI cpu `some`) for a
 * missed deadline to be put down to the machine. A hung workload on a healthy node leaves it
 * near 0; the simulated cluster on 2 loaded cores, where a 3-s stress missed a 33-s deadline,
 * read above 90 %. Half is the conservative line: a missed deadline below it stays a failure. */
export const STARVED_SHARE = 0.5;

/**
 * Why a command that ran into its deadline on the node (`timedOut` as judged, or killed there by
 * the node's own `timeout`, exit 124) was starved rather than hung: the node's CPU was stalled
 * for at least STARVED_SHARE of the time it ran. Null when it was not, or when the node could
 * not say (no end record, no PSI): then the missed deadline is the workload's, as before.
 */
export function starvedAtDeadline(
  r: { exitCode: number | null; endRecord?: { elapsedMs: number; cpuWaitMs?: number } | null },
  timedOut: boolean,
): string | null {
  const rec = r.endRecord;
  if (!(timedOut || r.exitCode === 124) || rec?.cpuWaitMs === undefined) return null;
  if (rec.cpuWaitMs < STARVED_SHARE * rec.elapsedMs) return null;
  return `it ran into its deadline while the node's CPU was stalled for ${fmtS(rec.cpuWaitMs)} s of its ${fmtS(rec.elapsedMs)} s (PSI cpu some): a machine too loaded to run it, not a hung workload; undecided`;
}

function fmtS(ms: number): string {
  return (ms / 1000).toFixed(1);
}
