// `slicecheck parse KIND FILE [--json]`: one of our parsers on a captured output, for checking
// what a node printed, or a capture, without running anything.
import { stringify } from "yaml";
import { SlicecheckError } from "../../errors.js";
import { parseComputeApps } from "../../nvsmi/apps.js";
import { isNvsmiParseKind, NVSMI_PARSE_KINDS } from "../../nvsmi/kinds.js";
import { parseQueryGpu } from "../../nvsmi/query.js";
import { didYouMean } from "../../util/closest.js";
import { WORKLOAD_PARSE_KINDS, type WorkloadParseKind } from "../../workloads/parsers/kinds.js";
import type { Out } from "../context.js";
import { readInput, STDIN } from "../input.js";

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

/** `--fields name,memory.total`: the field list of a headerless `--format=csv,noheader` output,
 * as given to --query-gpu / --query-compute-apps. */
function fieldList(v: string): string[] {
  const fields = v
    .replace(/^--query-(?:gpu|compute-apps)=/, "")
    .split(",")
    .map((f) => f.trim());
  const bad = fields.find((f) => !/^[a-z][a-z0-9_.]*$/.test(f));
  if (bad !== undefined) {
    throw new SlicecheckError(
      "USAGE",
      `--fields expects the comma list given to --query-gpu/--query-compute-apps (e.g. name,memory.total), got ${JSON.stringify(bad)} in ${JSON.stringify(v)}`,
    );
  }
  return fields;
}

export async function parseCommand(
  kind: string,
  file: string,
  o: { json?: boolean; fields?: string },
  io: Out,
): Promise<number> {
  let parser: ((text: string) => unknown) | null = isNvsmiParseKind(kind)
    ? NVSMI_PARSE_KINDS[kind]
    : Object.hasOwn(WORKLOAD_PARSE_KINDS, kind)
      ? WORKLOAD_PARSE_KINDS[kind as WorkloadParseKind]
      : null;
  if (parser && o.fields !== undefined) {
    const fields = fieldList(o.fields);
    if (kind === "query") parser = (text) => parseQueryGpu(text, fields);
    else if (kind === "apps") parser = (text) => parseComputeApps(text, fields);
    else
      throw new SlicecheckError("USAGE", `--fields is for the query and apps kinds, not ${kind}`);
  }
  if (!parser)
    throw new SlicecheckError(
      "USAGE",
      `unknown parse kind '${kind}'${didYouMean(kind, PARSE_KINDS)}; one of: ${PARSE_KINDS.join(" ")}`,
    );
  let text: string;
  try {
    text = await readInput(file);
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
    const name = file === STDIN ? "<stdin>" : file;
    if (e instanceof SlicecheckError)
      throw new SlicecheckError(e.code, `${name}: ${e.message}`, { ...e.context, file: name });
    throw e;
  }
  io.out(o.json ? JSON.stringify(result, null, 2) : stringify(result).trimEnd());
  return 0;
}
