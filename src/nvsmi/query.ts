// `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`. MIG mode fields read
// `Enabled`/`Disabled`; `utilization.gpu` reads `[N/A]` with MIG on, which becomes null.

import { parseNvCsv } from "./csv.js";
import type { QueryResult } from "./types.js";

export function parseQueryGpu(text: string, fields?: readonly string[]): QueryResult {
  return { rows: parseNvCsv("query", text, fields) };
}
