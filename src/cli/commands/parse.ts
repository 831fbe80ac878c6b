// `slicecheck parse KIND FILE [--json]`: one of our parsers on a captured output, for checking
// what a node printed, or a capture, without running anything.
import { readFileSync } from "node:fs";
import { stringify } from "yaml";
import { SlicecheckError } from "../../errors.js";
import { isNvsmiParseKind, NVSMI_PARSE_KINDS } from "../../nvsmi/kinds.js";
import { WORKLOAD_PARSE_KINDS, type WorkloadParseKind } from "../../workloads/parsers/kinds.js";
import type { Out } from "../context.js";

export const PARSE_KINDS = [
  ...Object.keys(NVSMI_PARSE_KINDS),
  ...Object.keys(WORKLOAD_PARSE_KINDS),
];

/** Leading `# source:` lines become blank lines, so parse errors keep the file's line numbers. */
export function blankSourceLines(text: string): string {
  const lines = text.split("\n");
  for (let i = 0; i < lines.length && lines[i]!.startsWith("# source:"); i++) lines[i] = "";
  return lines.join("\n");
}

export function parseCommand(kind: string, file: string, o: { json?: boolean }, io: Out): number {
  const parser = isNvsmiParseKind(kind)
    ? NVSMI_PARSE_KINDS[kind]
    : Object.hasOwn(WORKLOAD_PARSE_KINDS, kind)
      ? WORKLOAD_PARSE_KINDS[kind as WorkloadParseKind]
      : null;
  if (!parser)
    throw new SlicecheckError(
      "USAGE",
      `unknown parse kind '${kind}'; one of: ${PARSE_KINDS.join(" ")}`,
    );
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SlicecheckError(
      "USAGE",
      `${file}: cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
      { file },
    );
  }
  let result: unknown;
  try {
    result = parser(blankSourceLines(text));
  } catch (e) {
    if (e instanceof SlicecheckError)
      throw new SlicecheckError(e.code, `${file}: ${e.message}`, { ...e.context, file });
    throw e;
  }
  io.out(o.json ? JSON.stringify(result, null, 2) : stringify(result).trimEnd());
  return 0;
}
