// Shared helpers of the workload parsers: line splitting, strict numbers, and the one way a
// parser refuses input. Every parser reports the 1-based line of the text it was handed, so
// a user can open the file at that line (after the CLI stripped the `# source:` lines).

import { SlicecheckError } from "../../errors.js";

/** Longest excerpt of an offending line quoted in a message; captured lines can be 30 kB. */
const MAX_QUOTE = 160;

/**
 * Splits on "\n" and drops one trailing "\r" per line, so CRLF files parse like LF ones.
 * gpu-burn does its own splitting because its "\r" separates progress reports.
 */
export function splitLines(text: string): string[] {
  return text.split("\n").map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
}

/**
 * Blanks the leading `# source:` provenance lines that every capture file starts with. They are
 * emptied rather than removed so that the line numbers in PARSE errors are the file's own.
 */
export function stripSourceHeader(text: string): string {
  const lines = text.split("\n");
  for (let i = 0; i < lines.length && lines[i]?.startsWith("# source:"); i++) lines[i] = "";
  return lines.join("\n");
}

export function quote(text: string): string {
  return text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text;
}

/**
 * The error every parser throws on truncated or garbled records. Returned rather than thrown
 * so call sites read `throw parseError(...)` and TypeScript sees the branch end.
 */
export function parseError(kind: string, line: number, expected: string, got: string) {
  return new SlicecheckError(
    "PARSE",
    `${kind}: line ${line}: expected ${expected}, got '${quote(got)}'`,
    {
      kind,
      line,
    },
  );
}

const NUMBER = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

/** Strict decimal/exponent number (`12`, `0.01`, `1e-07`, `0e+00`); `Number("")` is 0, hence the regex. */
export function parseNumber(token: string): number | undefined {
  return NUMBER.test(token) ? Number(token) : undefined;
}

export function parseInteger(token: string): number | undefined {
  return /^[-+]?\d+$/.test(token) ? Number(token) : undefined;
}
