// Access to the real captured outputs for the parser tests. Captures live in fixtures/captures;
// a few byte-exact files live outside the repo in ../shared/reference/fetched and are only
// read (never copied). Tests over fetched files are declared only when the file is present.

import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isSlicecheckError } from "../../src/errors.js";
import { stripSourceHeader } from "../../src/workloads/parsers/text.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CAPTURES = path.join(ROOT, "fixtures", "captures");
const FETCHED = path.join(ROOT, "..", "shared", "reference", "fetched");

/** Capture file names starting with any of `prefixes`, sorted. */
export function captureNames(...prefixes: string[]): string[] {
  return readdirSync(CAPTURES)
    .filter((name) => prefixes.some((p) => name.startsWith(p)))
    .sort();
}

/** A capture as the CLI hands it to a parser: leading `# source:` lines stripped. */
export function readCapture(name: string): string {
  return stripSourceHeader(readFileSync(path.join(CAPTURES, name), "utf8"));
}

/** The fetched file's text, or undefined when ../shared is not checked out next to the repo. */
export function readFetched(name: string): string | undefined {
  const file = path.join(FETCHED, name);
  return existsSync(file) ? stripSourceHeader(readFileSync(file, "utf8")) : undefined;
}

export function fetchedNames(prefix: string): string[] {
  return existsSync(FETCHED)
    ? readdirSync(FETCHED)
        .filter((n) => n.startsWith(prefix))
        .sort()
    : [];
}

/** 1-based number of the first line of `text` that satisfies `match`. */
export function lineOf(text: string, match: (line: string) => boolean): number {
  const index = text.split("\n").findIndex(match);
  assert.ok(index >= 0, "test setup: line not found");
  return index + 1;
}

/** Replaces the first line satisfying `match`; fails the test if there is none. */
export function replaceLine(text: string, match: (line: string) => boolean, by: string): string {
  const lines = text.split("\n");
  const index = lines.findIndex(match);
  assert.ok(index >= 0, "test setup: line not found");
  lines[index] = by;
  return lines.join("\n");
}

export function assertParseError(parse: () => unknown, kind: string, line: number): void {
  assert.throws(parse, (err: unknown) => {
    assert.ok(
      isSlicecheckError(err, "PARSE"),
      `expected a PARSE SlicecheckError, got ${String(err)}`,
    );
    assert.deepEqual(err.context, { kind, line });
    assert.match(err.message, new RegExp(`^${kind}: line ${line}: expected .+, got '.*'$`, "s"));
    return true;
  });
}
