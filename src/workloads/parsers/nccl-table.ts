// The results table of nccl-tests. Its leading columns changed across versions (reference
// workloads.md 1.3): v2.13+ prints `size count type redop root`, v2.0-era all_reduce has no
// `root`, broadcast has `root` but no `redop`, all_gather has neither, and the error column is
// `#wrong` (count) or `error` (max delta, `0e+00`). So the layout is read from the column header
// when there is one, and inferred from the first row when a capture starts mid-table.

import { parseError, parseInteger, parseNumber } from "./text.js";

const KIND = "nccl-tests";

export type LeadColumn = "redop" | "root";

export interface TableLayout {
  /** Columns between `type` and the first `time`, in order. */
  lead: LeadColumn[];
  /** `#wrong` (v2.13+: number of wrong elements) or `error` (older: max delta). */
  errorColumn: "#wrong" | "error";
}

export interface NcclMeasure {
  timeUs: number;
  algbw: number;
  busbw: number;
  /** `#wrong` count, or the legacy max-delta `error`; null when validation was off (`N/A`). */
  wrong: number | null;
}

export interface NcclRow {
  size: number;
  count: number;
  type: string;
  /** null when this layout has no redop column. */
  redop: string | null;
  /** null when this layout has no root column. */
  root: number | null;
  outOfPlace: NcclMeasure;
  inPlace: NcclMeasure;
}

const MEASURE_NAMES = ["time", "algbw", "busbw"] as const;

/** Reads the `#  size  count  type  redop  root  time ...` header line (the `#` included). */
export function parseTableHeader(line: string, lineNo: number): TableLayout {
  const tokens = line.replace(/^#/, "").trim().split(/\s+/);
  const expected = "'size count type [redop] [root] time algbw busbw #wrong|error' twice";
  if (tokens[0] !== "size" || tokens[1] !== "count" || tokens[2] !== "type") {
    throw parseError(KIND, lineNo, expected, line);
  }
  const lead: LeadColumn[] = [];
  let i = 3;
  for (; i < tokens.length && tokens[i] !== "time"; i++) {
    const name = tokens[i];
    if ((name !== "redop" && name !== "root") || lead.includes(name)) {
      throw parseError(KIND, lineNo, expected, line);
    }
    lead.push(name);
  }
  const measures = tokens.slice(i);
  if (measures.length !== 8) throw parseError(KIND, lineNo, expected, line);
  let errorColumn: TableLayout["errorColumn"] | undefined;
  for (const half of [measures.slice(0, 4), measures.slice(4)]) {
    const [time, algbw, busbw, err] = half;
    if (time !== MEASURE_NAMES[0] || algbw !== MEASURE_NAMES[1] || busbw !== MEASURE_NAMES[2]) {
      throw parseError(KIND, lineNo, expected, line);
    }
    if ((err !== "#wrong" && err !== "error") || (errorColumn && errorColumn !== err)) {
      throw parseError(KIND, lineNo, expected, line);
    }
    errorColumn = err;
  }
  return { lead, errorColumn: errorColumn ?? "#wrong" };
}

/**
 * A capture that starts mid-table has no header: 13 columns is the v2.13+ layout, 11 is
 * all_gather of the v2.0 era; with 12 the fourth token tells root (a number) from redop (a word).
 */
export function inferLayout(tokens: string[], line: string, lineNo: number): TableLayout {
  // Only the legacy max-delta column prints exponents (`0e+00`); `N/A` occurs in both.
  const errorColumn = /e[-+]/.test(tokens.at(-1) ?? "") ? "error" : "#wrong";
  switch (tokens.length) {
    case 13:
      return { lead: ["redop", "root"], errorColumn };
    case 11:
      return { lead: [], errorColumn };
    case 12:
      return {
        lead: [parseInteger(tokens[3] ?? "") === undefined ? "redop" : "root"],
        errorColumn,
      };
    default:
      throw parseError(KIND, lineNo, "a result row of 11, 12 or 13 columns", line);
  }
}

export function describeLayout(layout: TableLayout): string {
  const measures = `time algbw busbw ${layout.errorColumn}`;
  return ["size", "count", "type", ...layout.lead, measures, measures].join(" ");
}

function measure(tokens: string[], at: number, line: string, lineNo: number): NcclMeasure {
  const values: number[] = [];
  for (const [k, name] of MEASURE_NAMES.entries()) {
    const value = parseNumber(tokens[at + k] ?? "");
    if (value === undefined || value < 0) {
      throw parseError(KIND, lineNo, `a number in the ${name} column`, line);
    }
    values.push(value);
  }
  const wrongToken = tokens[at + 3] ?? "";
  const wrong = wrongToken === "N/A" ? null : parseNumber(wrongToken);
  if (wrong === undefined)
    throw parseError(KIND, lineNo, "a number or N/A in the #wrong column", line);
  const [timeUs = 0, algbw = 0, busbw = 0] = values;
  return { timeUs, algbw, busbw, wrong };
}

/** One row; any missing, extra or malformed cell is a truncated or garbled record. */
export function parseRow(line: string, lineNo: number, layout: TableLayout): NcclRow {
  const tokens = line.trim().split(/\s+/);
  const width = 3 + layout.lead.length + 8;
  if (tokens.length !== width) {
    throw parseError(KIND, lineNo, `${width} columns (${describeLayout(layout)})`, line);
  }
  const size = parseInteger(tokens[0] ?? "");
  const count = parseInteger(tokens[1] ?? "");
  const type = tokens[2] ?? "";
  if (size === undefined || size < 0 || count === undefined || count < 0) {
    throw parseError(KIND, lineNo, "integer size and count", line);
  }
  if (!/^[A-Za-z]\w*$/.test(type)) throw parseError(KIND, lineNo, "a data type name", line);
  let redop: string | null = null;
  let root: number | null = null;
  for (const [k, column] of layout.lead.entries()) {
    const token = tokens[3 + k] ?? "";
    if (column === "redop") {
      if (!/^[A-Za-z]\w*$/.test(token)) throw parseError(KIND, lineNo, "a reduction op name", line);
      redop = token;
    } else {
      const value = parseInteger(token);
      if (value === undefined) throw parseError(KIND, lineNo, "an integer root", line);
      root = value;
    }
  }
  const at = 3 + layout.lead.length;
  return {
    size,
    count,
    type,
    redop,
    root,
    outOfPlace: measure(tokens, at, line, lineNo),
    inPlace: measure(tokens, at + 4, line, lineNo),
  };
}
