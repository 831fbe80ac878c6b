// What a checker says about one scenario: passed, failed (the node broke a promise), or broken
// (the harness could not tell: a lost connection, a workload that never reported).
export type VerdictStatus = "passed" | "failed" | "broken";

export interface Verdict {
  name: string;
  status: VerdictStatus;
  summary: string;
  /** A soft route's expected weakness, measured: passed with its figure, never a violation
   * (verdicts/routes.ts). Absent on the promise checks. */
  characterisation?: boolean;
  evidence: {
    figures: Record<string, number | string | boolean | null>;
    logLines: string[];
  };
}
