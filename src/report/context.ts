// What a finished `run` hands to its reports: the run's facts (`<out>/run.json`: id, label,
// nodes, layout, suites, exit code; no check and no count) and its check records
// (`<out>/checks.jsonl`, written by the one sink as each check finished). JUnit, Allure, the
// compliance page and `slicecheck report` all count from those records, so that every report
// of a run says the same thing.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../errors.js";
import { type CheckRecord, readCheck } from "../verdicts/checks.js";
import type { SignoffPolicy } from "../verdicts/coverage.js";

export interface ContextNode {
  node: string;
  driver: string | null;
  cuda: string | null;
  gpus: { index: number; name: string; uuid: string }[];
  error: string | null;
  /** Every instance the node had during the run (absent in run.json of older runs). */
  instances?: ContextInstance[];
}

export interface ContextInstance {
  gpu: number;
  label: string;
  profile: string;
  /** `start:size`; null for a whole GPU (MIG off). */
  placement: string | null;
  sm: number | null;
  uuid: string;
  /** A MIG instance (a GPU instance id), not a whole GPU. */
  mig: boolean;
}

export interface RunContext {
  runId: string;
  label: string | null;
  startedAt: string;
  finishedAt: string;
  durationS: number;
  exitCode: number;
  layout: { file: string; config: string } | null;
  suites: string[];
  nodes: ContextNode[];
  /** Every check record of the run, as the one sink received them: read from checks.jsonl,
   * never stored in run.json, so no report can count from a copy that went stale. */
  allChecks: CheckRecord[];
  /** What the run was asked to cover and the sign-off policy in effect (absent in older runs:
   * their window is unknown and the default policy judges them). */
  scope?: RunScope;
}

export interface RunScope {
  /** `--duration`: how long each workload (and each victims' window) ran, in seconds. */
  windowS: number;
  /** `--faults` as given. */
  faults: string[];
  /** `--aggressors` as given; null: every instance. */
  aggressors: number | null;
  policy: SignoffPolicy;
}

/** What run.json holds: the run's facts, no check and no count. */
export type RunFacts = Omit<RunContext, "allChecks">;

export const RUN_CONTEXT_FILE = "run.json";
export const CHECKS_FILE = "checks.jsonl";

const usage = (file: string, why: string) =>
  new SlicecheckError(
    "USAGE",
    `cannot read ${file} (${why}); give --results the allure-results folder of a \`slicecheck run\` output`,
  );

/** The check records of checks.jsonl, one per line. A line cut short by an interrupt (the last
 * one, written as the run was stopped) is left out: every whole line is a finished check. */
export function readChecks(file: string): CheckRecord[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const out: CheckRecord[] = [];
  lines.forEach((l, k) => {
    if (!l.trim()) return;
    try {
      out.push(readCheck(JSON.parse(l) as CheckRecord));
    } catch (e) {
      if (k < lines.length - 1 && lines.slice(k + 1).some((x) => x.trim()))
        throw usage(file, `line ${k + 1}: ${(e as Error).message}`);
    }
  });
  return out;
}

/** run.json's facts with the checks of checks.jsonl beside it: what every report reads. */
export function readRunContext(outDir: string): RunContext {
  const file = join(outDir, RUN_CONTEXT_FILE);
  let facts: RunFacts & { allChecks?: unknown; rows?: unknown };
  try {
    facts = JSON.parse(readFileSync(file, "utf8")) as typeof facts;
  } catch (e) {
    throw usage(file, (e as Error).message);
  }
  const checks = join(outDir, CHECKS_FILE);
  if (!existsSync(checks))
    throw usage(
      checks,
      facts.rows && !facts.allChecks
        ? "missing: this run was written by a slicecheck older than its check records; rerun it"
        : "missing: a run writes one line per check there",
    );
  const { allChecks: _old, ...rest } = facts;
  return { ...(rest as RunFacts), allChecks: readChecks(checks) };
}
