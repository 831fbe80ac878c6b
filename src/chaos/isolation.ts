// The isolation suite's options and verdict rows as the reports read them. The scenarios run
// from suites/isolation.ts through src/harness/services.ts (NodeScenarios per node).
import { SlicecheckError } from "../errors.js";
import { didYouMean } from "../util/closest.js";
import type { VerdictStatus } from "../util/status.js";
import { FAULTS, type FaultName, type ScenarioKind } from "./history.js";
import type { IsolationMode } from "./plan.js";

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
      `--faults: unknown fault ${bad.map((b) => `'${b}'${didYouMean(b, FAULTS)}`).join(", ") || "(none given)"}; available: ${FAULTS.join(", ")}`,
    );
  return [...new Set(list)] as FaultName[];
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
  status: VerdictStatus;
  /** A soft route's expected weakness, measured (passed): the check's kind is characterised. */
  characterisation: boolean;
  summary: string;
  evidence: { figures: Record<string, unknown>; logLines: string[] };
}

export interface IsolationSummary {
  runId: string;
  rows: IsolationRow[];
  problems: { node: string; message: string }[];
}
