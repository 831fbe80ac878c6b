// The workload kinds `slicecheck parse KIND FILE --json` accepts, each a pure parser of the whole
// captured output (the CLI strips the leading `# source:` lines of capture files first).

import { parseDcgmiDiag } from "./dcgmi.js";
import { parseGpuBurn } from "./gpu-burn.js";
import { parseNcclTests } from "./nccl-tests.js";

export type WorkloadParseKind = "nccl-tests" | "gpu-burn" | "dcgmi";

export const WORKLOAD_PARSE_KINDS: Record<WorkloadParseKind, (text: string) => unknown> = {
  "nccl-tests": parseNcclTests,
  "gpu-burn": parseGpuBurn,
  dcgmi: parseDcgmiDiag,
};
