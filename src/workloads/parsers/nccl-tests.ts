// Parser of nccl-tests output (`all_reduce_perf` and siblings), every layout from the v2.0 era
// to v2.19 (reference workloads.md section 1). Lines of no known shape (shell prompts, NCCL
// INFO/WARN lines, mpirun and profiler chatter) are skipped; a line that starts like a record
// but does not finish like one is a truncated or garbled capture and is refused.

import {
  inferLayout,
  type NcclRow,
  parseRow,
  parseTableHeader,
  type TableLayout,
} from "./nccl-table.js";
import { parseError, parseInteger, parseNumber, splitLines } from "./text.js";

export type { NcclMeasure, NcclRow } from "./nccl-table.js";

const KIND = "nccl-tests";

export interface NcclRank {
  rank: number;
  /** null in the v2.0-era layout, which had no Group column. */
  group: number | null;
  pid: number;
  host: string;
  device: number;
  /** As printed between the brackets: `0x1b` (bus only, before v2.14.1) or `0000:2d:00`. */
  busId: string;
  name: string;
}

export type NcclFailureKind =
  | "cuda" // `host: Test CUDA failure file:line 'msg'` (exit 2)
  | "nccl" // `host: Test NCCL failure file:line 'msg / last error'` (exit 3)
  | "timeout" // `host: Test timeout (Ns) file:line` (-T, exit 4)
  | "test-failure" // ` .. host pid N: Test failure file:line`, kept only when nothing else explains it
  | "duplicate-gpu" // NCCL < 2.30: two ranks on one GPU, e.g. two MIG slices of one GPU
  | "multi-rank-gpu" // NCCL >= 2.30 wording of the same refusal
  | "invalid-gpu-count" // `-g N` with fewer visible GPUs, e.g. -g 2 inside one MIG slice
  | "min-bandwidth" // `# Avg bus bandwidth : x FAILED` against NCCL_TESTS_MIN_BW
  | "last-error" // `# error: <ncclGetLastError>` after the footer
  | "duplicate-header"; // a non-MPI binary under mpirun: N independent 1-rank runs

export interface NcclFailure {
  /** Host that printed it; null for messages that name none (NCCL's own texts). */
  host: string | null;
  kind: NcclFailureKind;
  message: string;
  /** nccl-tests source location (`common.cu`, 941) when the line carries one. */
  file: string | null;
  line: number | null;
}

export interface NcclTestsResult {
  ranks: NcclRank[];
  rows: NcclRow[];
  /** Sum over every `# Out of bounds values` footer; null when the output has none. */
  outOfBounds: number | null;
  /** `# Avg bus bandwidth` in GB/s; with several footers the lowest, the one a regression check needs. */
  avgBusBandwidth: number | null;
  failures: NcclFailure[];
}

const NCCL_DEBUG = /^\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN|TRACE|ABORT)\b/;
const MPI_TAG = /^\[\d+,\d+\]<(?:stdout|stderr)>:\s?/;
const RUN_HEADER = /^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\b/;
const RANK_START = /^#\s+Rank\s/;
const RANK =
  /^#\s+Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([0-9a-fA-Fx:]+)\]\s+(\S.*?)\s*$/;
const TABLE_HEADER = /^#\s+size\s+count\s/;
const OOB_START = /^#\s*Out of bounds values/;
const OOB = /^#\s*Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)\s*$/;
const AVG_START = /^#\s*Avg bus bandwidth/;
const AVG = /^#\s*Avg bus bandwidth\s*:\s*(\S+)(?:\s+(OK|FAILED))?\s*$/;
const LAST_ERROR = /^#\s*error:\s*(\S.*?)\s*$/;
const TEST_FAILURE_START = /\bTest (?:CUDA|NCCL) failure\b/;
const TEST_FAILURE = /(\S+): Test (CUDA|NCCL) failure ([^\s:]+):(\d+) '(.*)'\s*$/;
const TIMEOUT = /(\S+): Test timeout \((\d+)s\) ([^\s:]+):(\d+)/;
const TRACE = /^ \.\. (\S+) pid (\d+): Test failure ([^\s:]+):(\d+)\s*$/;
const DUPLICATE_GPU =
  /Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device [0-9a-fA-F]+/;
const MULTI_RANK =
  /Multiple Ranks are using the same GPU\/Partition\.[^\n]*|communicator has multiple ranks using the same NVML device/;
const INVALID_GPUS = /Invalid number of GPUs: \d+ requested but only \d+ were found\./;
const ROW_START = /^\s*\d+\s+\d+\s+[A-Za-z]/;

interface State {
  result: NcclTestsResult;
  layout: TableLayout | null;
  /** Inside a results table: any line starting with a digit must then be a complete row. */
  inTable: boolean;
  /** Run headers seen since the last row, footer or failure; >1 means concurrent runs. */
  headersWithoutData: number;
  maxConcurrentHeaders: number;
  oobSeen: boolean;
  avgSeen: boolean;
}

export function parseNcclTests(text: string): NcclTestsResult {
  const state: State = {
    result: { ranks: [], rows: [], outOfBounds: null, avgBusBandwidth: null, failures: [] },
    layout: null,
    inTable: false,
    headersWithoutData: 0,
    maxConcurrentHeaders: 0,
    oobSeen: false,
    avgSeen: false,
  };
  for (const [index, raw] of splitLines(text).entries()) {
    const line = raw.replace(MPI_TAG, "").trimEnd();
    if (line === "" || NCCL_DEBUG.test(line)) continue;
    parseLine(state, line, index + 1);
  }
  if (state.maxConcurrentHeaders > 1) {
    state.result.failures.push({
      host: null,
      kind: "duplicate-header",
      message:
        `${state.maxConcurrentHeaders} '# nThread' headers printed before any result: a binary built ` +
        `without MPI=1 ran under mpirun as ${state.maxConcurrentHeaders} independent 1-rank runs`,
      file: null,
      line: null,
    });
  }
  return state.result;
}

function parseLine(state: State, line: string, lineNo: number): void {
  if (parseFailureLine(state, line, lineNo)) {
    dataSeen(state);
    return;
  }
  if (line.startsWith("#")) {
    parseCommentLine(state, line, lineNo);
    return;
  }
  if (state.inTable ? /^\s*\d/.test(line) : ROW_START.test(line)) {
    const tokens = line.trim().split(/\s+/);
    state.layout ??= inferLayout(tokens, line, lineNo);
    state.result.rows.push(parseRow(line, lineNo, state.layout));
    state.inTable = true;
    dataSeen(state);
  }
}

function dataSeen(state: State): void {
  state.headersWithoutData = 0;
}

function parseCommentLine(state: State, line: string, lineNo: number): void {
  const result = state.result;
  if (RUN_HEADER.test(line)) {
    state.headersWithoutData++;
    state.maxConcurrentHeaders = Math.max(state.maxConcurrentHeaders, state.headersWithoutData);
    state.layout = null;
    state.inTable = false;
  } else if (RANK_START.test(line)) {
    result.ranks.push(parseRank(line, lineNo));
  } else if (TABLE_HEADER.test(line)) {
    state.layout = parseTableHeader(line, lineNo);
    state.inTable = true;
  } else if (OOB_START.test(line)) {
    const m = OOB.exec(line);
    if (!m) throw parseError(KIND, lineNo, "'# Out of bounds values : N OK|FAILED'", line);
    result.outOfBounds = (result.outOfBounds ?? 0) + Number(m[1]);
    state.inTable = false;
    dataSeen(state);
  } else if (AVG_START.test(line)) {
    const m = AVG.exec(line);
    const value = parseNumber(m?.[1] ?? "");
    if (!m || value === undefined) {
      throw parseError(KIND, lineNo, "'# Avg bus bandwidth : <GB/s> [OK|FAILED]'", line);
    }
    result.avgBusBandwidth = Math.min(result.avgBusBandwidth ?? value, value);
    if (m[2] === "FAILED") {
      result.failures.push({
        host: null,
        kind: "min-bandwidth",
        message: `average bus bandwidth ${value} GB/s is below NCCL_TESTS_MIN_BW`,
        file: null,
        line: null,
      });
    }
    state.inTable = false;
    dataSeen(state);
  } else if (LAST_ERROR.test(line)) {
    const message = LAST_ERROR.exec(line)?.[1] ?? "";
    result.failures.push({ host: null, kind: "last-error", message, file: null, line: null });
  } else if (line.trim() === "#") {
    // The lone `#` closes the device list and the table; rows never follow it directly.
    state.inTable = false;
  }
}

function parseRank(line: string, lineNo: number): NcclRank {
  const m = RANK.exec(line);
  if (!m) {
    throw parseError(
      KIND,
      lineNo,
      "'#  Rank N [Group N] Pid N on HOST device N [BUSID] NAME'",
      line,
    );
  }
  return {
    rank: Number(m[1]),
    group: m[2] === undefined ? null : Number(m[2]),
    pid: Number(m[3]),
    host: m[4] ?? "",
    device: Number(m[5]),
    busId: m[6] ?? "",
    name: m[7] ?? "",
  };
}

/** Returns true when the line was a failure report (recorded). */
function parseFailureLine(state: State, line: string, lineNo: number): boolean {
  const failures = state.result.failures;
  if (TEST_FAILURE_START.test(line)) {
    const m = TEST_FAILURE.exec(line);
    if (!m) {
      throw parseError(KIND, lineNo, "'HOST: Test CUDA|NCCL failure FILE:LINE 'MESSAGE''", line);
    }
    failures.push({
      host: m[1] ?? null,
      kind: m[2] === "CUDA" ? "cuda" : "nccl",
      // NCCL >= 2.13 appends ` / <ncclGetLastError>`, usually empty.
      message: (m[5] ?? "").replace(/ \/ $/, ""),
      file: m[3] ?? null,
      line: parseInteger(m[4] ?? "") ?? null,
    });
    return true;
  }
  const timeout = TIMEOUT.exec(line);
  if (timeout) {
    failures.push({
      host: timeout[1] ?? null,
      kind: "timeout",
      message: `test timeout (${timeout[2]}s)`,
      file: timeout[3] ?? null,
      line: parseInteger(timeout[4] ?? "") ?? null,
    });
    return true;
  }
  const trace = TRACE.exec(line);
  if (trace) {
    // TESTCHECK prints one of these per stack level; they only matter when nothing else
    // explains the failure (exit 7 on wrong data prints nothing but this).
    const host = trace[1] ?? null;
    if (!failures.some((f) => f.host === host)) {
      failures.push({
        host,
        kind: "test-failure",
        message: `test failure (pid ${trace[2]})`,
        file: trace[3] ?? null,
        line: parseInteger(trace[4] ?? "") ?? null,
      });
    }
    return true;
  }
  for (const [pattern, kind] of [
    [DUPLICATE_GPU, "duplicate-gpu"],
    [MULTI_RANK, "multi-rank-gpu"],
    [INVALID_GPUS, "invalid-gpu-count"],
  ] as const) {
    const m = pattern.exec(line);
    if (m) {
      failures.push({ host: null, kind, message: m[0], file: null, line: null });
      return true;
    }
  }
  return false;
}
