// What a finished `run` hands to its reports: one JSON document (`<out>/run.json`) that the
// Allure suites, the JUnit file, the compliance page and `slicecheck report` all read, so that
// every report of a run says the same thing.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IsolationRow } from "../chaos/isolation.js";
import { SlicecheckError } from "../errors.js";
import type { CheckRecord } from "../verdicts/checks.js";
import type { SignoffPolicy } from "../verdicts/coverage.js";

export interface ContextRow {
  node: string;
  gpu: number | null;
  gpuName: string | null;
  instance: string;
  instanceUuid: string;
  profile: string;
  placement: string | null;
  sm: number | null;
  suite: string;
  metrics: Record<string, number>;
  status: "ok" | "failed" | "broken";
  note: string | null;
  log: string;
}

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

/** One check of the layout, health or regression suites: already decided, replayed in Allure. */
export interface ExtraCheck {
  suite: "layout" | "health" | "regression";
  node: string;
  gpu: number | null;
  title: string;
  status: TestStatus;
  message: string;
  parameters: Record<string, string>;
  attachment: { name: string; content: string } | null;
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
  rows: ContextRow[];
  isolation: IsolationRow[];
  problems: { node: string; suite: string | null; message: string }[];
  /** The layout, health and regression suites' checks (absent in run.json of older runs). */
  checks?: ExtraCheck[];
  /** Every check record of the run, as the sink received them (runs from the harness on). */
  allChecks?: CheckRecord[];
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

export const RUN_CONTEXT_FILE = "run.json";

export function readRunContext(outDir: string): RunContext {
  const file = join(outDir, RUN_CONTEXT_FILE);
  try {
    return JSON.parse(readFileSync(file, "utf8")) as RunContext;
  } catch (e) {
    throw new SlicecheckError(
      "USAGE",
      `cannot read ${file} (${(e as Error).message}); give --results the allure-results folder of a \`slicecheck run\` output`,
    );
  }
}

/** The GPU a row or verdict belongs to, named as the Allure `suite` label. */
export function gpuTitle(ctx: RunContext, node: string, gpu: number | null): string {
  if (gpu === null) return "GPU ?";
  const name = ctx.nodes.find((n) => n.node === node)?.gpus.find((g) => g.index === gpu)?.name;
  return name ? `GPU ${gpu} (${name})` : `GPU ${gpu}`;
}

export type TestStatus = "passed" | "failed" | "broken";

/** Counts over every check of the run: instance × suite rows, verdicts and node problems. */
export function countChecks(ctx: RunContext): Record<TestStatus, number> {
  const c = { passed: 0, failed: 0, broken: 0 };
  for (const r of ctx.rows) c[r.status === "ok" ? "passed" : r.status]++;
  for (const v of ctx.isolation) c[v.status]++;
  for (const x of ctx.checks ?? []) c[x.status]++;
  c.broken += ctx.problems.length;
  return c;
}
