// Shared line handling for every nvidia-smi parser: numbering, skipping lines that are not
// part of the tool's output, and the one way a parser reports malformed input.

import { SlicecheckError } from "../errors.js";

/** One line of the input, numbered 1-based as in the text the caller gave us. */
export interface SourceLine {
  readonly no: number;
  readonly text: string;
}

const SOURCE_LINE = /^# source:/;

/**
 * Drops the leading `# source: …` provenance lines of a capture file. Only leading ones: the
 * parsers skip stray ones anyway, and this keeps the rest byte-identical for comparisons.
 */
export function stripSourceLines(text: string): string {
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length && SOURCE_LINE.test(lines[i] ?? "")) i++;
  return lines.slice(i).join("\n");
}

// A shell prompt pasted with the output: `$ cmd`, `user@host:~$ cmd`, `root@host:~#`,
// `[root@node01 ~]# cmd`, `(venv) user@host:~$`. nvidia-smi never starts a line like this.
const PROMPT =
  /^\s*(?:\([^)]*\)\s*)?(?:\$|#|(?:\[[^\]]*@[^\]]*\]|[\w.-]+@[\w.-]+(?::\S*)?)\s*[$#%])(?:\s|$)/;
const NCCL_INFO = /\bNCCL (?:INFO|WARN)\b/;
// sudo's own prompt, pasted with what the command printed after it: `[sudo] password for ops:`
// (sudo's default "[sudo] password for %p: "), `Password:`, `ops@gpu01's password:` (ssh).
const PASSWORD_PROMPT = /^\s*(?:\[sudo\] password for [^:]+|Password|\S+'s password):\s*$/;

/** True for lines that are not output of the tool: blanks, prompts, provenance, NCCL chatter. */
export function isNoiseLine(text: string): boolean {
  if (text.trim() === "") return true;
  if (SOURCE_LINE.test(text)) return true;
  if (NCCL_INFO.test(text)) return true;
  if (PASSWORD_PROMPT.test(text)) return true;
  return PROMPT.test(text);
}

/** Splits on LF or CRLF, keeping every line with its 1-based number. */
export function allLines(text: string): SourceLine[] {
  const raw = text.split("\n");
  // A final newline does not start another line.
  if (raw.length > 1 && raw[raw.length - 1] === "") raw.pop();
  return raw.map((t, i) => ({ no: i + 1, text: t.endsWith("\r") ? t.slice(0, -1) : t }));
}

/** The lines that belong to the tool's output, in order, with their original numbers. */
export function significantLines(text: string): SourceLine[] {
  return allLines(text).filter((l) => !isNoiseLine(l.text));
}

function shorten(s: string): string {
  return s.length > 120 ? `${s.slice(0, 117)}...` : s;
}

/** The one error every parser throws: names the kind, the line, what was expected and what came. */
export function parseError(
  kind: string,
  line: number,
  expected: string,
  got: string | null,
): SlicecheckError {
  const gotText = got === null ? "end of input" : `'${shorten(got)}'`;
  return new SlicecheckError(
    "PARSE",
    `${kind}: line ${line}: expected ${expected}, got ${gotText}`,
    {
      kind,
      line,
    },
  );
}

/** PCI bus id as nvidia-smi prints it: `00000000:3B:00.0` (domain of 4 or 8 hex digits). */
export const PCI_BUS_ID = "[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]";
