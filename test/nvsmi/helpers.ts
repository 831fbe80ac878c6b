// Helpers to corrupt real captures in the ways real transfers do (a cut line, a lost line, a
// stream that stops early) and to check the parser names the exact line.

import assert from "node:assert/strict";
import { SlicecheckError } from "../../src/errors.js";

/** 1-based number of the first line containing `needle` (after line `from`). */
export function lineOf(text: string, needle: string, from = 0): number {
  const idx = text.split("\n").findIndex((l, i) => i >= from && l.includes(needle));
  assert.ok(idx >= 0, `capture has no line containing '${needle}'`);
  return idx + 1;
}

/** Replaces line `no` (1-based) with what `edit` makes of it. */
export function editLine(text: string, no: number, edit: (line: string) => string): string {
  const lines = text.split("\n");
  assert.ok(no >= 1 && no <= lines.length, `no line ${no}`);
  lines[no - 1] = edit(lines[no - 1]!);
  return lines.join("\n");
}

/** Drops line `no` (1-based). */
export function dropLine(text: string, no: number): string {
  const lines = text.split("\n");
  lines.splice(no - 1, 1);
  return lines.join("\n");
}

/** Keeps lines 1..`last` only, as when a stream stops early. */
export function keepLines(text: string, last: number): string {
  return `${text.split("\n").slice(0, last).join("\n")}\n`;
}

/** Asserts `fn` throws SlicecheckError PARSE naming `line` of `kind`, and returns the error. */
export function assertParseError(fn: () => unknown, kind: string, line: number): SlicecheckError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof SlicecheckError, `expected a SlicecheckError, got ${String(caught)}`);
  assert.equal(caught.code, "PARSE");
  assert.equal(caught.context.kind, kind);
  assert.equal(caught.context.line, line, caught.message);
  assert.match(caught.message, new RegExp(`^${kind}: line ${line}: expected .+, got .+`));
  return caught;
}
