// Result shape shared by the two `dcgmi diag` layouts (table and `-j` JSON), so a caller never
// needs to know which one the node printed.

export type DcgmiResult = "Pass" | "Fail" | "Skip" | "Warn";

export interface DcgmiGpuResult {
  /** DCGM GPU id (entity id), as in `GPU0: Pass` or `Fail - GPU: 0`. */
  id: number;
  result: DcgmiResult;
}

export interface DcgmiTest {
  /** Deployment, Integration, Hardware, Stress (table sections / JSON categories). */
  category: string;
  name: string;
  /** Overall result; with mixed per-GPU results the worst (Fail > Warn > Pass > Skip). */
  result: DcgmiResult;
  /** Per-GPU results; "all" where DCGM 3 printed `<result> - All`; empty when none printed. */
  gpus: "all" | DcgmiGpuResult[];
  /** Warning, Error and Info texts with the 45-character wrapping undone. */
  info: string[];
}

export interface DcgmiDiag {
  version: string | null;
  driver: string | null;
  tests: DcgmiTest[];
  /** dcgmi's own failure (`Error: Unable to complete diagnostic ...`, JSON `runtime_error`). */
  error: string | null;
}

const RANK: Record<DcgmiResult, number> = { Skip: 0, Pass: 1, Warn: 2, Fail: 3 };

export function worstResult(a: DcgmiResult, b: DcgmiResult): DcgmiResult {
  return RANK[b] > RANK[a] ? b : a;
}

/**
 * `Not Run` is folded into Skip: both mean the test gave no verdict, and callers only need to
 * tell a verdict (Pass/Warn/Fail) from its absence.
 */
export function toResult(text: string): DcgmiResult | undefined {
  switch (text) {
    case "Pass":
    case "Fail":
    case "Skip":
    case "Warn":
      return text;
    case "Not Run":
      return "Skip";
    default:
      return undefined;
  }
}
