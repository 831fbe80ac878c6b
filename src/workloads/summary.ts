// The per-instance rows of a run: what the terminal table, the reports and the records show.
// Pure: a died or erroring workload is a failed check; one the harness could not run is broken.
import type { VerdictStatus } from "../util/status.js";
import type { InstanceOutcome } from "./launcher.js";
import { instanceLabel, type NodeRunResult } from "./node-run.js";

/** A finished workload's status: the one vocabulary's (src/util/status.ts), never skipped (an
 * instance that ran has an outcome). */
export type InstanceStatus = VerdictStatus;

export function statusOf(o: InstanceOutcome): InstanceStatus {
  // A late exit whose end the node did not record is in harnessError (judgeLateExit): broken.
  if (o.harnessError) return "broken";
  // Past its deadline on the node's own clock (judgeLateExit: never the controller's lateness
  // alone), or died (a crash, a kill, a signal that stopped it early, each named in the note):
  // a failed check. Exit 0 with figures that stop short of the duration: the measurement is cut
  // short, so the harness cannot decide; never a pass.
  // Into its deadline on a node too loaded to run it (starvedAtDeadline): undecided, never a
  // failure the machine's load made.
  if (o.starved) return "broken";
  if (o.died || o.timedOut) return "failed";
  if (o.incomplete) return "broken";
  const errors = o.measurements.find(
    (m) => m.metric === "errors" || m.metric === "wrong" || m.metric === "faulty",
  );
  if (errors && errors.value > 0) return "failed";
  if (o.parseError || o.measurements.length === 0) return "broken";
  return "passed";
}

export interface RunRow {
  node: string;
  instance: string;
  gpuUuid: string;
  instanceUuid: string;
  profile: string;
  placement: string | null;
  sm: number | null;
  suite: string;
  metrics: Record<string, number>;
  exitCode: number | null;
  status: InstanceStatus;
  log: string;
  note: string | null;
}

export function summarize(runId: string, results: NodeRunResult[]) {
  const rows: RunRow[] = [];
  const problems: { node: string; suite: string | null; message: string }[] = [];
  for (const r of [...results].sort((a, b) => a.node.localeCompare(b.node))) {
    if (r.error) problems.push({ node: r.node, suite: null, message: r.error });
    for (const s of r.suites) {
      if (s.skipped) problems.push({ node: r.node, suite: s.suite, message: s.skipped });
      for (const out of s.outcomes) {
        const status = statusOf(out);
        rows.push({
          node: r.node,
          instance: instanceLabel(out.instance),
          gpuUuid: out.instance.gpuUuid,
          instanceUuid: out.instance.uuid,
          profile: out.instance.profile,
          placement: out.instance.placement,
          sm: out.instance.sm,
          suite: s.suite,
          metrics: Object.fromEntries(out.measurements.map((m) => [m.metric, m.value])),
          exitCode: out.exitCode,
          status,
          log: out.log,
          note:
            out.harnessError ??
            out.starved ??
            (out.timedOut
              ? "killed at its deadline"
              : out.incomplete
                ? `${out.incomplete} (exit ${out.exitCode ?? out.signal})`
                : out.died
                  ? `exit ${out.exitCode ?? out.signal}`
                  : null) ??
            out.parseError ??
            out.late ??
            null,
        });
      }
    }
  }
  return { runId, rows, problems };
}
