// The end of a run: its reports (run.json with the run's facts, junit.xml,
// results-summary.json, the Allure results completed) written from the check records, and what a write that fails does to the run's
// exit code (a run whose reports are missing is never called passed).
import { join } from "node:path";
import { isSlicecheckError } from "../errors.js";
import { writeCheckReports } from "../report/from-checks.js";
import { executorInfo } from "../report/suites.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import type { CheckSink } from "../verdicts/checks.js";
import { DEFAULT_POLICY } from "../verdicts/coverage.js";
import type { HarnessRunOptions } from "./run-state.js";
import type { NodeSession } from "./session.js";

export function errText(e: unknown): string {
  return isSlicecheckError(e)
    ? `[${e.code}] ${e.message}`
    : e instanceof Error
      ? e.message
      : String(e);
}

export function codeOf(e: unknown, fallback = "HARNESS_ERROR"): string {
  return isSlicecheckError(e) ? e.code : fallback;
}

const nodeOf = (s: NodeSession) => s.node.name;

/** Writes the run's reports; returns the exit code, 2 where they could not be written. */
export function writeReports(
  o: HarnessRunOptions,
  sink: CheckSink,
  sessions: readonly NodeSession[],
  r: { exitCode: number; interrupted: boolean; startedMs?: number },
): number {
  let exitCode = r.exitCode;
  try {
    writeCheckReports({
      runId: o.runId,
      label: o.label,
      exitCode,
      interrupted: r.interrupted,
      suites: o.suites.map((f) => f.name),
      layout: o.layout ? { file: o.layout.file, config: o.layout.config.name } : null,
      checks: sink.checks,
      nodes: sessions.map((s) => ({
        node: nodeOf(s),
        driver: s.discovered?.driver ?? null,
        cuda: s.discovered?.cuda ?? null,
        instances: s.discovered?.instances ?? [],
        error: s.error ? errText(s.error) : null,
      })),
      history: join(o.outDir, "history.jsonl"),
      outDir: o.outDir,
      allure: o.allure,
      executor: executorInfo({ runId: o.runId, label: o.label }),
      startedMs: r.startedMs,
      scope: {
        windowS: o.durationS,
        faults: [...o.faults],
        aggressors: o.aggressors,
        policy: o.signoffPolicy ?? DEFAULT_POLICY,
      },
    });
  } catch (e) {
    // The checks are kept (terminal, records); but a run whose reports are missing cannot
    // be called passed: CI reads the JUnit, a reviewer the compliance page.
    const c = sink.harness({
      suite: HARNESS_SUITE,
      title: "the run's reports are written",
      status: "broken",
      code: codeOf(e, "WRITE"),
      message: `could not write the run's reports in ${o.outDir} (${errText(e)}); free space there or give --out another folder, then \`slicecheck report\` can be rerun from what is left`,
    });
    o.err(`slicecheck: ${c.message}`);
    if (!r.interrupted && exitCode === 0) exitCode = 2;
  }
  return exitCode;
}
