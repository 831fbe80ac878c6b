// Parser of wilicc/gpu-burn output (reference workloads.md section 2). gpu-burn reprints its
// progress with a leading "\r" instead of a newline, and its children's stderr (`read[0] error
// 0`, init failures) lands glued to those lines, so the text is cut at "\n" (for line numbers),
// then at "\r", then at known stderr messages. The parent exits 0 even when a GPU is FAULTY, so
// the `Tested N GPUs:` summary is the verdict and is required to be complete.

import { parseError } from "./text.js";

const KIND = "gpu-burn";

export type GpuBurnStatus = "OK" | "FAULTY";

export interface GpuBurnGpu {
  /** Ordinal among the tested clients, not the CUDA id (`-i 2` still reports `GPU 0`). */
  index: number;
  status: GpuBurnStatus;
}

export interface GpuBurnProgress {
  percent: number;
  gflops: number[];
  /** Errors since the last summary; null for a client that DIED (its counter is garbage then). */
  errors: (number | null)[];
  /** Degrees C; null where gpu-burn printed `--` (no temperature known yet). */
  temps: (number | null)[];
}

export interface GpuBurnResult {
  gpus: GpuBurnGpu[];
  /** The last progress report printed; null when no client ever reported. */
  progress: GpuBurnProgress | null;
  /** Some client reported -1 (`(DIED!)`) at least once. */
  died: boolean;
  /** `No clients are alive!  Aborting` (exit 123). */
  aborted: boolean;
  /** Init and runtime failures, in order, consecutive repeats collapsed (the read-error loop). */
  errors: string[];
}

const READ_ERROR = /read\[\d+\] error -?\d+/g;
const STDERR_START =
  /Couldn't init (?:a GPU test|CUDA): |Failure during compute: |terminate called after throwing|No clients are alive!|No CUDA devices/;
const ERROR_LINES = [
  /^Couldn't init a GPU test:/,
  /^Couldn't init CUDA:/,
  /^cuInit returned /,
  /^Failure during compute:/,
  /^terminate called after throwing an instance of /,
  /^No CUDA devices/,
  /^No CUDA capable GPUs found/,
  /^Syntax error near /,
  /^Low mem for result/,
];
const WHAT = /^what\(\):\s*(.*)$/;
const PROGRESS_START = /^\d+(?:\.\d+)?%/;
const PROGRESS =
  /^(\d+(?:\.\d+)?)%\s+proc'd:\s+(.*?)\s+errors:\s+(.*?)\s+temps:\s+(.*?)(?:\s+power:\s+(.*?))?\s*$/;
const PROC_ITEM = /^(-?\d+) \((\d+(?:\.\d+)?) Gflop\/s\)$/;
const TESTED = /^Tested (\d+) GPUs?:$/;

interface State {
  result: GpuBurnResult;
  /** While reading the summary: how many `GPU i: OK|FAULTY` lines are still due. */
  summary: { expected: number; gpus: GpuBurnGpu[]; line: number } | null;
}

export function parseGpuBurn(text: string): GpuBurnResult {
  const state: State = {
    result: { gpus: [], progress: null, died: false, aborted: false, errors: [] },
    summary: null,
  };
  const lines = text.split("\n");
  for (const [index, line] of lines.entries()) {
    for (const segment of line.split("\r")) parseSegment(state, segment, index + 1);
  }
  const summary = state.summary;
  if (summary) {
    throw parseError(
      KIND,
      lines.length,
      `${summary.expected} 'GPU i: OK|FAULTY' lines after 'Tested ${summary.expected} GPUs:' (line ${summary.line})`,
      `end of input after ${summary.gpus.length}`,
    );
  }
  return state.result;
}

function pushError(result: GpuBurnResult, message: string): void {
  if (result.errors.at(-1) !== message) result.errors.push(message);
}

function parseSegment(state: State, rawSegment: string, lineNo: number): void {
  // `read[%zu] error %d` is printed without a newline, so it sits anywhere in a progress line.
  const segment = rawSegment.replace(READ_ERROR, (m) => {
    pushError(state.result, m);
    return "";
  });
  // Other stderr messages end with a newline but can start right after an unterminated progress line.
  const glued = STDERR_START.exec(segment);
  if (glued && glued.index > 0 && segment.slice(0, glued.index).trim() !== "") {
    parseText(state, segment.slice(0, glued.index), lineNo);
    parseText(state, segment.slice(glued.index), lineNo);
    return;
  }
  parseText(state, segment, lineNo);
}

function parseText(state: State, raw: string, lineNo: number): void {
  // A `^C` echoed by the terminal that stopped the run is not part of the record.
  const text = raw.replace(/\s*\^C\s*$/, "").trim();
  const result = state.result;
  if (state.summary) {
    if (text === "") return;
    const summary = state.summary;
    const i = summary.gpus.length;
    const m = new RegExp(`^GPU ${i}: (OK|FAULTY)$`).exec(text);
    if (!m) throw parseError(KIND, lineNo, `'GPU ${i}: OK|FAULTY'`, raw);
    summary.gpus.push({ index: i, status: m[1] === "FAULTY" ? "FAULTY" : "OK" });
    if (summary.gpus.length === summary.expected) {
      result.gpus = summary.gpus;
      state.summary = null;
    }
    return;
  }
  if (text === "") return;
  if (PROGRESS_START.test(text)) {
    result.progress = parseProgress(state, text, raw, lineNo);
    return;
  }
  const tested = TESTED.exec(text);
  if (tested) {
    const expected = Number(tested[1]);
    if (expected === 0) result.gpus = [];
    else state.summary = { expected, gpus: [], line: lineNo };
    return;
  }
  if (text.startsWith("No clients are alive!")) {
    result.aborted = true;
    return;
  }
  const what = WHAT.exec(text);
  if (what) {
    const last = result.errors.at(-1);
    if (last?.startsWith("terminate called") && !last.includes("what():")) {
      result.errors[result.errors.length - 1] = `${last} what(): ${what[1]}`;
    } else {
      pushError(result, text);
    }
    return;
  }
  if (ERROR_LINES.some((pattern) => pattern.test(text))) pushError(result, text);
}

/**
 * `%.1f%%  proc'd: N (G Gflop/s) - ...   errors: E[  (WARNING!)|  (DIED!)]- ...   temps: T C - ... `
 * with an optional `power:` section in recent builds; every section has one item per client.
 */
function parseProgress(state: State, text: string, raw: string, lineNo: number): GpuBurnProgress {
  const expected = "'P%  proc'd: N (G Gflop/s) ...  errors: E ...  temps: T C ...'";
  const m = PROGRESS.exec(text);
  if (!m) throw parseError(KIND, lineNo, expected, raw);
  const procs = (m[2] ?? "").split(/(?<=\))\s+-\s+/).map((item) => PROC_ITEM.exec(item));
  const errors = splitItems(m[3] ?? "", /(-?\d+)(?:\s+\((DIED|WARNING)!\))?/y);
  const temps = splitItems(m[4] ?? "", /(?:(-?\d+) C|--)/y);
  const power = m[5] === undefined ? undefined : splitItems(m[5], /(?:(-?\d+) W|--)/y);
  const n = procs.length;
  if (
    procs.some((p) => p === null) ||
    errors === null ||
    temps === null ||
    power === null ||
    errors.length !== n ||
    temps.length !== n ||
    (power !== undefined && power.length !== n)
  ) {
    throw parseError(KIND, lineNo, `${expected} with one item per client in every section`, raw);
  }
  const died = procs.map((p, i) => p?.[1] === "-1" || errors[i]?.[2] === "DIED");
  if (died.some(Boolean)) state.result.died = true;
  return {
    percent: Number(m[1]),
    gflops: procs.map((p) => Number(p?.[2])),
    errors: errors.map((e, i) => (died[i] ? null : Number(e[1]))),
    temps: temps.map((t) => (t[1] === undefined ? null : Number(t[1]))),
  };
}

/** Items separated by `- ` (gpu-burn prints `%d C ` then `- `; after `(DIED!)` there is no space). */
function splitItems(section: string, item: RegExp): RegExpExecArray[] | null {
  const separator = /\s*-\s+/y;
  const items: RegExpExecArray[] = [];
  let at = 0;
  for (;;) {
    item.lastIndex = at;
    const m = item.exec(section);
    if (!m) return null;
    items.push(m);
    at = item.lastIndex;
    if (section.slice(at).trim() === "") return items;
    separator.lastIndex = at;
    if (!separator.test(section)) return null;
    at = separator.lastIndex;
  }
}
