// What the aggressor runs for each fault, and what the victims run beside it. Timings are
// fractions of the scenario's duration so that the fault lands while the victims are measured.
import { BUILTIN_PROGRAMS, stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import type { FaultName } from "./history.js";

/** Seconds the aggressor's OOM outlasts the victims' load window: the memory check runs in
 * them, after the load, so that nothing of the harness shares a victim's instance while it is
 * measured (a memhog beside the stress is a second process on the same compute unit and takes
 * half its time slices: a healthy victim read as slowed). */
export const MEMCHECK_WINDOW_S = 6;

const s = (x: number) => String(Number(x.toFixed(2)));

/** The aggressor's workload; `durationS` is how long the victims are measured. */
export function aggressorSpec(fault: FaultName, durationS: number): WorkloadSpec {
  const after = durationS * 0.3;
  switch (fault) {
    case "oom":
      // Allocate until out of memory, then hold it while the victims run and on through the
      // memory check's own window after theirs (the check must see the memory still taken).
      return {
        name: "memhog",
        program: BUILTIN_PROGRAMS.memhog,
        args: ["--hold", s(durationS + MEMCHECK_WINDOW_S)],
        durationS: durationS + MEMCHECK_WINDOW_S,
      };
    case "crash":
      return crasher("illegal-address", after, durationS);
    case "kill":
      return crasher("sigkill", after, durationS);
    case "hang":
      // Killed at its deadline: half the victims' run, no grace.
      return crasher("hang", 0, durationS * 0.5);
    case "noisy":
      return stressSpec(durationS);
  }
}

function crasher(mode: string, after: number, durationS: number): WorkloadSpec {
  return {
    name: "crasher",
    program: BUILTIN_PROGRAMS.crasher,
    args: ["--mode", mode, "--after", s(after)],
    durationS,
  };
}

/** A victim's check that it can still allocate (half its free memory, then 256 MiB more). */
export function memcheckSpec(): WorkloadSpec {
  return {
    name: "memhog",
    program: BUILTIN_PROGRAMS.memhog,
    args: ["--fraction", "0.5", "--check", "256M"],
    durationS: 5,
  };
}

/** Seconds past its duration an aggressor is given before it is killed. */
export function aggressorGraceS(fault: FaultName): number {
  return fault === "hang" ? 0 : 10;
}

/**
 * Seconds past its duration a victim's stress is given before it is killed. Generous: a
 * deadline that a slow control machine overruns reads as a hung victim; a real hang is still
 * caught, since its samples stop long before its duration.
 */
export function victimGraceS(durationS: number): number {
  return Math.max(10, durationS);
}
