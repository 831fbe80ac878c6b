// The CSV that `--query-gpu=…` and `--query-compute-apps=…` print with `--format=csv[,noheader]
// [,nounits]`. Cells are separated by ", "; with a header the units sit in brackets after the
// field (`memory.total [MiB]`), without `nounits` they also follow each value (`81559 MiB`).

import { parseError, type SourceLine, significantLines } from "./text.js";
import type { QueryRow, QueryValue } from "./types.js";

// Fields whose values look numeric but are identifiers or versions, kept as strings.
const STRING_FIELDS = new Set([
  "name",
  "gpu_name",
  "serial",
  "gpu_serial",
  "uuid",
  "gpu_uuid",
  "pci.bus_id",
  "gpu_bus_id",
  "driver_version",
  "vbios_version",
  "compute_cap",
  "process_name",
  "pci.device_id",
  "pci.sub_device_id",
]);

// A few query names print a different header; header detection must still recognise them.
const HEADER_ALIASES: Readonly<Record<string, readonly string[]>> = {
  gpu_name: ["name"],
  gpu_uuid: ["uuid"],
  gpu_serial: ["serial"],
  gpu_bus_id: ["pci.bus_id"],
  used_memory: ["used_gpu_memory"],
  name: ["process_name"],
};

const HEADER_CELL = /^([a-z][a-z0-9_.]*)(?: \[([^\]]+)\])?$/;
const NUMERIC = /^(-?\d+(?:\.\d+)?)(?: ([A-Za-z%]+))?$/;
const EMPTY_OUTPUT = /^(?:No devices were found|No running (?:compute )?processes found)\.?$/;

function cells(line: SourceLine): string[] {
  return line.text.split(",").map((c) => c.trim());
}

function isHeader(row: string[], fields: readonly string[] | undefined): boolean {
  const names = row.map((c) => HEADER_CELL.exec(c)?.[1]);
  if (names.some((n) => n === undefined)) return false;
  if (fields === undefined) return true;
  return names.some((n, i) => {
    const f = fields[i];
    return f !== undefined && (n === f || (HEADER_ALIASES[f]?.includes(n!) ?? false));
  });
}

function convert(field: string, raw: string): QueryValue {
  // `[N/A]`, `[Not Supported]`, `[Insufficient Permissions]`, …: the driver has no value.
  if (raw === "" || raw === "N/A" || /^\[.*\]$/.test(raw)) return null;
  if (STRING_FIELDS.has(field)) return raw;
  const m = NUMERIC.exec(raw);
  return m ? Number(m[1]) : raw;
}

/**
 * Rows keyed by the field names as given (`fields`), or as the header names them when no list
 * is given. Without a header line a field list is required.
 */
export function parseNvCsv(kind: string, text: string, fields?: readonly string[]): QueryRow[] {
  const lines = significantLines(text).filter((l) => !EMPTY_OUTPUT.test(l.text.trim()));
  const first = lines[0];
  if (!first) return [];
  let keys: readonly string[];
  let body = lines;
  const firstCells = cells(first);
  if (isHeader(firstCells, fields)) {
    const headerNames = firstCells.map((c) => HEADER_CELL.exec(c)![1]!);
    if (fields !== undefined && fields.length !== headerNames.length) {
      throw parseError(kind, first.no, `a header of ${fields.length} fields`, first.text);
    }
    keys = fields ?? headerNames;
    body = lines.slice(1);
  } else if (fields !== undefined) {
    keys = fields;
  } else {
    // Output of --format=csv,noheader carries no names: the caller must say what was queried.
    throw parseError(
      kind,
      first.no,
      `a CSV header line; for --format=csv,noheader output give the queried fields: \`slicecheck parse ${kind} --fields name,memory.total FILE\``,
      first.text,
    );
  }
  return body.map((line) => {
    const row = cells(line);
    if (row.length !== keys.length) {
      throw parseError(kind, line.no, `${keys.length} comma-separated values`, line.text);
    }
    const out: QueryRow = {};
    keys.forEach((key, i) => {
      out[key] = convert(key, row[i]!);
    });
    return out;
  });
}
