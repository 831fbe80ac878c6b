// `nvidia-smi --query-compute-apps=<fields> --format=csv[,noheader][,nounits]`: one row per
// CUDA process. Under MIG, `used_memory` may read `[N/A]` (null) for lack of permissions.

import { parseNvCsv } from "./csv.js";
import type { AppsResult } from "./types.js";

export function parseComputeApps(text: string, fields?: readonly string[]): AppsResult {
  return { apps: parseNvCsv("apps", text, fields) };
}
