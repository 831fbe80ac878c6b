// Whether the aggressor's fault landed while the victims ran, from the node's own record of each
// process's start and end (their end records, one clock). A victim that was not running when a
// crash struck, or that barely overlapped a held fault, was never exposed to it: its "unaffected"
// would be a pass for a test that did not happen (seen under a loaded controller: the victims'
// stress started after the aggressor had already crashed). Such a check is broken, never passed.
// Pure.
import type { ChaosEvent, FaultName } from "../chaos/history.js";

/** Faults that strike at one instant (the crasher's exit): the victim must be running then,
 * and for at least this share of its own run after it, so that an effect has time to show. */
const INSTANT: ReadonlySet<FaultName> = new Set(["crash", "kill"]);
const AFTER_SHARE = 0.1;
/** Faults held over a window (memory taken, a hung context, a noisy neighbour): the victim's
 * run must share at least this part of itself with the fault's window. The hang lasts half the
 * victims' duration, so 0.25 leaves room for the start of one to trail the other. */
const HELD_SHARE = 0.25;

type Span = { startS: number; endS: number };

/** Why the victims were not exposed to the fault, or null when each of them was. */
export function faultMissedVictims(
  fault: FaultName,
  aggressor: ChaosEvent | undefined,
  loads: readonly ChaosEvent[],
): string | null {
  // Only victims that ran to their end: their pass or slowdown is what the fault must explain.
  // One that died or was killed is judged by victims.ts as before (a death or a hang beside a
  // neighbour's fault is that fault's failure; a process killed at its deadline may leave no
  // end record).
  const ran = loads.filter((l) => l.type === "ok");
  if (ran.length === 0) return null;
  const a = aggressor?.data.nodeSpan;
  if (!a)
    return "the node's record of when the fault ran is missing, so whether the victims were running then is unknown";
  const missed: string[] = [];
  for (const load of ran) {
    const v = load.data.nodeSpan;
    if (!v) {
      missed.push(`${load.instance}: the node's record of when it ran is missing`);
      continue;
    }
    const why = INSTANT.has(fault) ? instantMiss(a.endS, v) : heldMiss(a, v);
    if (why) missed.push(`${load.instance} ${why}`);
  }
  return missed.length > 0
    ? `the fault did not land while the victims ran: ${missed.join("; ")}`
    : null;
}

const f1 = (x: number) => x.toFixed(1);

function instantMiss(at: number, v: Span): string | null {
  const len = v.endS - v.startS;
  if (at < v.startS) return `started ${f1(v.startS - at)} s after the fault struck`;
  if (at > v.endS - AFTER_SHARE * len)
    return at > v.endS
      ? `had ended ${f1(at - v.endS)} s before the fault struck`
      : `ran only ${f1(v.endS - at)} s of its ${f1(len)} s after the fault`;
  return null;
}

function heldMiss(a: Span, v: Span): string | null {
  const len = v.endS - v.startS;
  const shared = Math.min(a.endS, v.endS) - Math.max(a.startS, v.startS);
  if (len > 0 && shared >= HELD_SHARE * len) return null;
  return `shared ${f1(Math.max(0, shared))} s of its ${f1(len)} s with the fault's window`;
}
