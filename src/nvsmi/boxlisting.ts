// The boxed listings of `nvidia-smi mig` (-lgip, -lgi, -lci, -lcip) share one shape: a border,
// a title row, header rows, a `|====|` rule, then records of one or two rows each closed by a
// `+----+` border. Column widths change across drivers (54/57/59, 79/81 columns) and columns
// come and go (Placement in -lci), so columns are identified by their header words and data
// rows are split on whitespace, never cut at character offsets.

import { parseError, type SourceLine, significantLines } from "./text.js";
import type { ListingNotice } from "./types.js";

export interface BoxRecord {
  readonly lines: SourceLine[];
  /** The border that closed the record. */
  readonly end: SourceLine;
}

export interface BoxTable {
  readonly title: SourceLine;
  readonly header: SourceLine[];
  readonly records: BoxRecord[];
}

export interface BoxScan {
  readonly tables: BoxTable[];
  readonly notices: ListingNotice[];
  /** Line number to name when the input ends too early. */
  readonly endNo: number;
}

const BORDER = /^\+-[-+]*\+$/;
const RULE = /^\|=+\|$/;
const ROW = /^\|.*\|$/;

/** A line the driver prints instead of a table: MIG off, nothing there, or a failure. */
export function parseNotice(text: string): ListingNotice | null {
  const t = text.trim();
  if (/^No MIG-enabled devices found\.?$/.test(t)) {
    return { kind: "mig-disabled", reason: null, message: t };
  }
  const none = /^No [A-Za-z ]+ found(?::\s*(.+?))?\.?$/.exec(t);
  if (none) {
    const reason = none[1] ?? null;
    const kind = reason === null || reason === "Not Found" ? "none" : "error";
    return { kind, reason, message: t };
  }
  const failed = /^(?:Failed to|Unable to) [^:]+:\s*(.+?)\.?$/.exec(t);
  if (failed) return { kind: "error", reason: failed[1] ?? null, message: t };
  return null;
}

/** Reads every listing table in the text (multi-GPU hosts may print one per GPU). */
export function scanBoxListings(kind: string, text: string, title: RegExp): BoxScan {
  const lines = significantLines(text).map((l) => ({ no: l.no, text: l.text.trimEnd() }));
  const endNo = (lines.at(-1)?.no ?? 0) + 1;
  const tables: BoxTable[] = [];
  const notices: ListingNotice[] = [];
  let i = 0;
  const at = (k: number): SourceLine | undefined => lines[k];
  const fail = (k: number, expected: string): never => {
    const l = at(k);
    throw parseError(kind, l?.no ?? endNo, expected, l?.text ?? null);
  };

  while (i < lines.length) {
    const line = lines[i]!;
    const notice = parseNotice(line.text);
    if (notice) {
      notices.push(notice);
      i++;
      continue;
    }
    if (!BORDER.test(line.text)) fail(i, "a '+---+' table border or a driver message");
    i++;
    const titleLine = at(i);
    if (!titleLine || !ROW.test(titleLine.text) || !title.test(cellText(titleLine.text))) {
      fail(i, `a '| ${title.source.replace(/[\\^$]/g, "")} |' title row`);
    }
    i++;
    const header: SourceLine[] = [];
    while (at(i) && ROW.test(at(i)!.text) && !RULE.test(at(i)!.text)) header.push(at(i++)!);
    if (!at(i) || !RULE.test(at(i)!.text)) fail(i, "a header row or the '|===|' rule");
    if (header.length === 0) fail(i, "header rows before the '|===|' rule");
    i++;
    const records: BoxRecord[] = [];
    // After the rule comes either a border (possibly the table's last) or a record's first row.
    while (at(i) && (ROW.test(at(i)!.text) || BORDER.test(at(i)!.text))) {
      if (BORDER.test(at(i)!.text)) {
        i++;
        if (!at(i) || !ROW.test(at(i)!.text)) break;
        continue;
      }
      const rows: SourceLine[] = [];
      while (at(i) && ROW.test(at(i)!.text)) rows.push(at(i++)!);
      if (!at(i) || !BORDER.test(at(i)!.text)) fail(i, "a '+---+' border closing the record");
      records.push({ lines: rows, end: at(i)! });
    }
    tables.push({ title: titleLine!, header, records });
  }
  return { tables, notices, endNo };
}

/** The text between the outer `|` of a row, trimmed. */
export function cellText(row: string): string {
  return row.replace(/^\|/, "").replace(/\|$/, "").trim();
}

/** Whitespace tokens of a row; `MIG` and the profile name after it form one token. */
export function rowTokens(row: string): string[] {
  const raw = cellText(row)
    .split(/\s+/)
    .filter((t) => t !== "");
  const out: string[] = [];
  for (let k = 0; k < raw.length; k++) {
    const t = raw[k]!;
    if (t === "MIG" && k + 1 < raw.length) {
      out.push(`MIG ${raw[++k]}`);
    } else {
      out.push(t);
    }
  }
  return out;
}

const ENGINES: Readonly<Record<string, string>> = {
  SM: "sm",
  DEC: "dec",
  ENC: "enc",
  OFA: "ofa",
  CE: "ce",
  JPEG: "jpeg",
  JPG: "jpeg",
};

export interface ColumnVocabulary {
  /** Words of the first header row and the keys they name, in order of repetition. */
  readonly primary: Readonly<Record<string, readonly string[]>>;
  /** First-row words that label a group of columns (`Exclusive`, `Shared`). */
  readonly groups?: readonly string[];
  /** Words of later header rows that continue a first-row label (`ID`, `Free/Total`). */
  readonly continuations: readonly string[];
}

/**
 * Keys of each data row of a record, in left-to-right order. Engine columns (SM, CE, …) may
 * sit under a second or third header row; the first header row carrying engines describes the
 * record's first row, the next one its second row.
 */
export function columnLayout(kind: string, header: SourceLine[], vocab: ColumnVocabulary) {
  const row1: string[] = [];
  const engineRows: string[][] = [];
  header.forEach((line, idx) => {
    const used = new Map<string, number>();
    const engines: string[] = [];
    for (const word of cellText(line.text)
      .split(/\s+/)
      .filter((w) => w !== "")) {
      const engine = ENGINES[word];
      const keys = idx === 0 ? vocab.primary[word] : undefined;
      if (engine !== undefined) {
        engines.push(engine);
        if (idx === 0) row1.push(engine);
      } else if (keys !== undefined) {
        const n = used.get(word) ?? 0;
        const key = keys[n];
        if (key === undefined) throw parseError(kind, line.no, "a known column name", word);
        used.set(word, n + 1);
        row1.push(key);
      } else if (idx === 0 ? !vocab.groups?.includes(word) : !vocab.continuations.includes(word)) {
        throw parseError(kind, line.no, "a known column name", word);
      }
    }
    if (engines.length > 0 && idx > 0) engineRows.push(engines);
    if (engines.length > 0 && idx === 0) engineRows.push([]);
  });
  const rows = [row1];
  if (engineRows.length > 0) {
    row1.push(...engineRows[0]!);
    if (engineRows[1]) rows.push(engineRows[1]);
  }
  return rows;
}

/** Checks that the layout has every column the result needs. */
export function requireColumns(
  kind: string,
  header: SourceLine[],
  rows: string[][],
  required: readonly string[],
): void {
  const have = new Set(rows.flat());
  for (const key of required) {
    if (!have.has(key)) {
      throw parseError(kind, header[0]!.no, `a '${key}' column in the header`, header[0]!.text);
    }
  }
}

/** Maps each record row's tokens to the layout's keys; a token count mismatch is garbled input. */
export function recordValues(
  kind: string,
  record: BoxRecord,
  rows: string[][],
): { values: Map<string, string>; lineOf: Map<string, SourceLine> } {
  if (record.lines.length !== rows.length) {
    const bad = record.lines[rows.length] ?? record.end;
    throw parseError(kind, bad.no, `a record of ${rows.length} row(s)`, bad.text);
  }
  const values = new Map<string, string>();
  const lineOf = new Map<string, SourceLine>();
  rows.forEach((keys, r) => {
    const line = record.lines[r]!;
    const tokens = rowTokens(line.text);
    if (tokens.length !== keys.length) {
      throw parseError(kind, line.no, `${keys.length} values (${keys.join(", ")})`, line.text);
    }
    keys.forEach((key, k) => {
      values.set(key, tokens[k]!);
      lineOf.set(key, line);
    });
  });
  return { values, lineOf };
}

/** Typed access to one record's values; every conversion failure names the row it came from. */
export class RecordFields {
  constructor(
    private readonly kind: string,
    private readonly values: Map<string, string>,
    private readonly lineOf: Map<string, SourceLine>,
  ) {}

  static of(kind: string, record: BoxRecord, rows: string[][]): RecordFields {
    const { values, lineOf } = recordValues(kind, record, rows);
    return new RecordFields(kind, values, lineOf);
  }

  has(key: string): boolean {
    return this.values.has(key);
  }

  private fail(key: string, expected: string): never {
    const line = this.lineOf.get(key);
    throw parseError(
      this.kind,
      line?.no ?? 0,
      expected,
      this.values.get(key) ?? line?.text ?? null,
    );
  }

  /** Matches the value against a pattern, failing with `expected` when it does not fit. */
  match(key: string, pattern: RegExp, expected: string): RegExpExecArray {
    const m = pattern.exec(this.values.get(key) ?? "");
    return m ?? this.fail(key, expected);
  }

  int(key: string): number {
    return Number(this.match(key, /^\d+$/, `an integer ${key}`)[0]);
  }

  num(key: string): number {
    return Number(this.match(key, /^\d+(?:\.\d+)?$/, `a number for ${key}`)[0]);
  }

  /** A profile name token (`MIG 1g.10gb+me`), returned without the prefix. */
  profileName(key: string): string {
    return this.match(key, /^(?:MIG )?([0-9A-Za-z][\w.+-]*)$/, "a 'MIG <profile>' name")[1]!;
  }

  /** `free/total` as in the Instances column. */
  ratio(key: string): [number, number] {
    const m = this.match(key, /^(\d+)\/(\d+)$/, `'free/total' for ${key}`);
    return [Number(m[1]), Number(m[2])];
  }

  /** `start:size` as in the Placement column. */
  placement(key: string): [number, number] {
    const m = this.match(key, /^(\d+):(\d+)$/, "a 'start:size' placement");
    return [Number(m[1]), Number(m[2])];
  }
}
