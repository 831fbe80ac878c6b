// The isolation suite's options and verdict rows as the reports read them. The scenarios run
// from suites/isolation.ts through src/harness/services.ts (NodeScenarios per node).
import { SlicecheckError } from "../errors.js";
import { didYouMean } from "../util/closest.js";
import type { VerdictStatus } from "../util/status.js";
import { FAULTS, type FaultName, type ScenarioKind } from "./history.js";
import type { IsolationMode } from "./plan.js";

/**
 * The faults whose victims' request latency is measured too (victimsLatencyUnaffected): each
 * costs a second strike of the fault while the victims serve, so not every fault by default.
 * An OOM (the neighbour that takes memory), a crash (the one that dies) and a noisy neighbour
 * (the one that takes compute) are what a serving tenant meets; kill reads as a crash from the
 * victims' side, and a hang waits for its own deadline twice. `--latency-faults` chooses.
 */
export const DEFAULT_LATENCY_FAULTS: readonly FaultName[] = ["oom", "crash", "noisy"];

/** `--latency-faults`: a comma list of faults, `none`, or absent for the default. */
export function parseLatencyFaults(s: string | undefined): FaultName[] {
  if (s === undefined) return [...DEFAULT_LATENCY_FAULTS];
  if (s.trim() === "none") return [];
  try {
    return parseFaults(s);
  } catch (e) {
    throw new SlicecheckError(
      "USAGE",
      (e as Error).message
        .replace("--faults", "--latency-faults")
        .replace("available:", "available: none,"),
    );
  }
}

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
