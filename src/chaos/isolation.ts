// The `isolation` suite of `slicecheck run`: scenarios on every node (in parallel), the verdicts
// of each, history.jsonl and verdicts.json in the run's folder, and the verdict table.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pLimit from "p-limit";
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { FAULTS, type FaultName, History, type ScenarioKind } from "./history.js";
import { runIsolationNode } from "./node.js";
import type { IsolationMode, IsolationNodeResult } from "./plan.js";

export function parseFaults(s: string | undefined): FaultName[] {
  if (s === undefined) return [...FAULTS];
  const list = s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = list.filter((x) => !(FAULTS as readonly string[]).includes(x));
  if (bad.length || list.length === 0)
    throw new SlicecheckError(
      "USAGE",
      `--faults: unknown fault ${bad.map((b) => `'${b}'`).join(", ") || "(none given)"}; available: ${FAULTS.join(", ")}`,
    );
  return [...new Set(list)] as FaultName[];
}

export interface IsolationRunOptions {
  runId: string;
  faults: FaultName[];
  durationS: number;
  aggressors?: number;
  outDir: string;
  tolerance?: number;
  concurrency?: number;
  signal?: AbortSignal;
  onProgress?: (line: string) => void;
}

export interface IsolationRow {
  mode: IsolationMode;
  route: string;
  node: string;
  gpu: number;
  aggressor: string;
  profile: string;
  fault: ScenarioKind;
  verdict: string;
  status: "passed" | "failed" | "broken";
  /** A soft route's expected weakness, measured (passed). */
  characterisation: boolean;
  summary: string;
  evidence: { figures: Record<string, unknown>; logLines: string[] };
}

export interface IsolationSummary {
  runId: string;
  rows: IsolationRow[];
  problems: { node: string; message: string }[];
}

export async function runIsolation(
  nodes: NodeSpec[],
  o: IsolationRunOptions,
): Promise<IsolationSummary> {
  const history = new History(join(o.outDir, "history.jsonl"));
  const limit = pLimit(o.concurrency ?? 64);
  const results: IsolationNodeResult[] = await Promise.all(
    nodes.map((node) =>
      limit(() =>
        runIsolationNode(node, {
          runId: o.runId,
          faults: o.faults,
          durationS: o.durationS,
          aggressors: o.aggressors,
          outDir: o.outDir,
          history,
          tolerance: o.tolerance,
          signal: o.signal,
          onProgress: o.onProgress,
        }),
      ),
    ),
  );
  const rows: IsolationRow[] = [];
  const problems: IsolationSummary["problems"] = [];
  for (const r of [...results].sort((a, b) => a.node.localeCompare(b.node))) {
    if (r.error) problems.push({ node: r.node, message: r.error });
    for (const s of r.results)
      for (const v of s.verdicts)
        rows.push({
          mode: s.mode,
          route: s.route,
          node: s.node,
          gpu: s.gpu,
          aggressor: s.aggressor,
          profile: s.profile,
          fault: s.fault,
          verdict: v.name,
          status: v.status,
          characterisation: v.characterisation === true,
          summary: v.summary,
          evidence: v.evidence,
        });
  }
  const summary = { runId: o.runId, rows, problems };
  writeFileSync(join(o.outDir, "verdicts.json"), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}

/** 0 every verdict holds; 1 one failed; 2 the harness could not check somewhere. */
export function isolationExit(s: IsolationSummary): number {
  if (s.rows.some((r) => r.status === "failed")) return 1;
  if (s.rows.some((r) => r.status === "broken") || s.problems.length || s.rows.length === 0)
    return 2;
  return 0;
}
