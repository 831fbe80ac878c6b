// What a checker says about one scenario: passed, failed (the node broke a promise), or broken
// (the harness could not tell: a lost connection, a workload that never reported).
import type { PassKind, VerdictStatus } from "../util/status.js";

export type { VerdictStatus } from "../util/status.js";

export interface Verdict {
  name: string;
  status: VerdictStatus;
  summary: string;
  /** How a passed verdict was shown (src/util/status.ts): `characterised` for a soft route's
   * expected weakness, measured with its figure, never a violation (verdicts/routes.ts);
   * `documented-constraint` for a limit the platform documents (verdicts/comm.ts). Absent on a
   * promise kept (measured) and on a verdict that did not pass. */
  kind?: Exclude<PassKind, "measured">;
  /** A failed verdict's own stable code (NVLINK_DOWN, BUSBW_BELOW_FLOOR), where one judgement
   * can fail in several ways; absent: the caller's code for the check. */
  code?: string;
  evidence: {
    figures: Record<string, number | string | boolean | null>;
    logLines: string[];
  };
}
