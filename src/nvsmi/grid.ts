// The default `nvidia-smi` table is a grid of boxed sections: header rows, a `|===+===|` rule,
// then records of one to three rows separated by `+---+---+` borders (with blanks where a cell
// spans records, as the MIG devices memory cell does). This reads that grid; table.ts gives the
// cells their meaning by locating header words, never by character offsets.

import { parseError, type SourceLine } from "./text.js";

export interface GridRecord {
  readonly lines: SourceLine[];
  /** The border that closed the record. */
  readonly end: SourceLine;
}

export interface Grid {
  readonly header: SourceLine[];
  readonly records: GridRecord[];
  /** Index of the first line after the grid. */
  readonly next: number;
}

// `+---+---+`, `|---+---|`, and `+------+      +---+` (a cell spanning two records).
const BORDER = /^[+|](?=.*-)[-+ ]*[+|]$/;
const RULE = /^\|=[=+|]*\|$/;
const ROW = /^\|.*\|$/;

export function isBorder(text: string): boolean {
  return BORDER.test(text);
}

export function isRow(text: string): boolean {
  return ROW.test(text) && !BORDER.test(text) && !RULE.test(text);
}

/** The cells of a row, between its `|` separators, untrimmed. */
export function cellsOf(text: string): string[] {
  return text.slice(1, -1).split("|");
}

export function words(cell: string): string[] {
  return cell.split(/\s+/).filter((w) => w !== "");
}

/** Reads header rows up to the rule, then records up to the border that ends the section. */
export function readGrid(kind: string, lines: SourceLine[], start: number, endNo: number): Grid {
  let i = start;
  const fail = (expected: string): never => {
    const l = lines[i];
    throw parseError(kind, l?.no ?? endNo, expected, l?.text ?? null);
  };
  const header: SourceLine[] = [];
  while (lines[i] && isRow(lines[i]!.text)) header.push(lines[i++]!);
  if (header.length === 0) fail("a header row");
  if (!lines[i] || !RULE.test(lines[i]!.text)) fail("a header row or the '|===|' rule");
  i++;
  const records: GridRecord[] = [];
  while (lines[i] && isRow(lines[i]!.text)) {
    const rows: SourceLine[] = [];
    while (lines[i] && isRow(lines[i]!.text)) rows.push(lines[i++]!);
    if (!lines[i] || !isBorder(lines[i]!.text)) fail("a '+---+' border closing the record");
    records.push({ lines: rows, end: lines[i++]! });
  }
  if (records.length === 0) {
    // An empty section still closes with a border.
    if (!lines[i] || !isBorder(lines[i]!.text)) fail("a record row or the closing border");
    i++;
  }
  return { header, records, next: i };
}

/** Where a header word sits: which header row and which cell. */
export interface Locus {
  readonly row: number;
  readonly cell: number;
  /** Position of the word among the words of that header cell. */
  readonly word: number;
}

/** Finds a header word, or a phrase of consecutive words such as `MIG M.`. */
export function locate(header: SourceLine[], phrase: string): Locus | null {
  const want = words(phrase);
  for (let row = 0; row < header.length; row++) {
    const cells = cellsOf(header[row]!.text);
    for (let cell = 0; cell < cells.length; cell++) {
      const have = words(cells[cell]!);
      for (let w = 0; w + want.length <= have.length; w++) {
        if (want.every((x, k) => have[w + k] === x)) return { row, cell, word: w };
      }
    }
  }
  return null;
}

/** A record that is one spanning row of text, e.g. `|  No MIG devices found   |`. */
export function messageRow(record: GridRecord): string | null {
  const only = record.lines.length === 1 ? record.lines[0]! : null;
  if (!only || cellsOf(only.text).length !== 1) return null;
  return cellsOf(only.text)[0]!.trim();
}

/** Checks a record has the header's cell count on every row: a cut row shows up here. */
export function checkCells(kind: string, header: SourceLine[], record: GridRecord): void {
  const want = cellsOf(header[0]!.text).length;
  for (const line of record.lines) {
    const got = cellsOf(line.text).length;
    if (got !== want) {
      throw parseError(kind, line.no, `a row of ${want} '|'-separated cells`, line.text);
    }
  }
}
