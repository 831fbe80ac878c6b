// A pure judgement (src/verdicts) as a suite reads it, one shape for every suite: its status,
// the stable code for each outcome, its figures and its log lines as evidence. A
// characterisation (a documented constraint, a soft route's measured weakness) passes with its
// own code, so reports can tell it from a kept promise.
import type { Verdict } from "../verdicts/types.js";
import type { VerdictView } from "./api-types.js";

export interface VerdictCodes {
  failed: string;
  broken: string;
  characterised: string;
  /** The evidence attachment's name. */
  evidence: string;
  /** Also mark a characterisation in the figures (the compliance page counts them apart). */
  markCharacterised: boolean;
}

export const ISOLATION_CODES: VerdictCodes = {
  failed: "ISOLATION_VIOLATION",
  broken: "ISOLATION_UNDECIDED",
  characterised: "CHARACTERISED",
  evidence: "log lines",
  markCharacterised: true,
};

export function verdictView(v: Verdict, gpu: number | null, c: VerdictCodes): VerdictView {
  return {
    title: v.name,
    gpu,
    status: v.status,
    code:
      v.status === "failed"
        ? c.failed
        : v.status === "broken"
          ? c.broken
          : v.characterisation
            ? c.characterised
            : "OK",
    message: v.summary,
    figures:
      v.characterisation && c.markCharacterised
        ? { ...v.evidence.figures, characterisation: true }
        : v.evidence.figures,
    evidence: v.evidence.logLines.length
      ? [{ name: c.evidence, content: v.evidence.logLines.join("\n") }]
      : [],
  };
}
