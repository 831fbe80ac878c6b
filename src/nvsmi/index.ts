// The nvidia-smi layer: pure parsers of every output slicecheck reads and builders of every
// command it sends. Other layers import from here.

export { parseComputeApps } from "./apps.js";
export * from "./commands.js";
export { parseGpus } from "./gpus.js";
export { isNvsmiParseKind, NVSMI_PARSE_KINDS, type NvsmiParseKind } from "./kinds.js";
export { parseLci } from "./lci.js";
export { parseLcip } from "./lcip.js";
export { parseLgi } from "./lgi.js";
export { parseLgip } from "./lgip.js";
export { parseLgipp } from "./lgipp.js";
export { type LostGpu, NVSMI_EXIT_GPU_LOST, splitLostGpus } from "./lost.js";
export { parseMigOp } from "./migop.js";
export * from "./nvlink.js";
export { parseQMig } from "./qmig.js";
export { parseQueryGpu } from "./query.js";
export { parseTable } from "./table.js";
export { isNoiseLine, stripSourceLines } from "./text.js";
export * from "./topo.js";
export type * from "./types.js";
export { parseXid } from "./xid.js";
