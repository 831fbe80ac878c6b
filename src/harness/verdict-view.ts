// A pure judgement (src/verdicts) as a suite reads it, one shape for every suite: its status,
// the stable code for each outcome, its kind when it passed, its figures and its log lines as
// evidence. A characterisation (a soft route's measured weakness) or a documented constraint
// passes with its kind, and its kind's code, so reports can tell it from a kept promise.
import { PASS_CODE } from "../util/status.js";
import type { Verdict } from "../verdicts/types.js";
import type { VerdictView } from "./api-types.js";

export interface VerdictCodes {
  failed: string;
  broken: string;
  /** The evidence attachment's name. */
  evidence: string;
  /** Also show a characterisation among the figures (`characterisation: true`, as the figures
   * table has always shown it); reports read the kind, not this figure. */
  markCharacterised: boolean;
}

export const ISOLATION_CODES: VerdictCodes = {
  failed: "ISOLATION_VIOLATION",
  broken: "ISOLATION_UNDECIDED",
  evidence: "log lines",
  markCharacterised: true,
};

export function verdictView(v: Verdict, gpu: number | null, c: VerdictCodes): VerdictView {
  const kind = v.status === "passed" ? (v.kind ?? "measured") : null;
  return {
    title: v.name,
    gpu,
    status: v.status,
    kind,
    code: kind ? PASS_CODE[kind] : v.status === "failed" ? (v.code ?? c.failed) : c.broken,
    message: v.summary,
    figures:
      kind === "characterised" && c.markCharacterised
        ? { ...v.evidence.figures, characterisation: true }
        : v.evidence.figures,
    evidence: v.evidence.logLines.length
      ? [{ name: c.evidence, content: v.evidence.logLines.join("\n") }]
      : [],
  };
}
