// The parse kinds `slicecheck parse KIND FILE --json` offers. The CLI strips leading
// `# source:` lines with stripSourceLines; the parsers also skip any they meet, so passing a
// capture file unstripped keeps error line numbers equal to the file's.

import { parseComputeApps } from "./apps.js";
import { parseGpus } from "./gpus.js";
import { parseLci } from "./lci.js";
import { parseLcip } from "./lcip.js";
import { parseLgi } from "./lgi.js";
import { parseLgip } from "./lgip.js";
import { parseLgipp } from "./lgipp.js";
import { parseMigOp } from "./migop.js";
import { parseNvlinkErrors, parseNvlinkStatus } from "./nvlink.js";
import { parseQueryGpu } from "./query.js";
import { parseTable } from "./table.js";
import { parseTopo } from "./topo.js";
import { parseXid } from "./xid.js";

export { stripSourceLines } from "./text.js";

export type NvsmiParseKind =
  | "gpus"
  | "query"
  | "lgip"
  | "lgipp"
  | "lgi"
  | "lci"
  | "lcip"
  | "mig-op"
  | "table"
  | "apps"
  | "xid"
  | "topo"
  | "nvlink-status"
  | "nvlink-errors";

export const NVSMI_PARSE_KINDS: Record<NvsmiParseKind, (text: string) => unknown> = {
  gpus: parseGpus,
  query: (text) => parseQueryGpu(text),
  lgip: parseLgip,
  lgipp: parseLgipp,
  lgi: parseLgi,
  lci: parseLci,
  lcip: parseLcip,
  "mig-op": parseMigOp,
  table: parseTable,
  apps: (text) => parseComputeApps(text),
  xid: parseXid,
  topo: parseTopo,
  "nvlink-status": parseNvlinkStatus,
  "nvlink-errors": parseNvlinkErrors,
};

export function isNvsmiParseKind(kind: string): kind is NvsmiParseKind {
  return Object.hasOwn(NVSMI_PARSE_KINDS, kind);
}
