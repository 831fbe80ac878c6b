// `dcgmi diag` output: the 80-column table of DCGM 3 and 4 (reference workloads.md 3.2, DCGM
// dcgmi/Diag.cpp) or the `-j` JSON. The table's name column is 25 wide, the info column wraps
// messages in 45-character chunks onto rows with an empty name; DCGM 3 prints `Pass - All` or
// `Fail - GPU: 0` per test, DCGM 4 the test result followed by one `GPU0: Pass` row per entity.
// The table is one record: a row cut short or a table without its closing border is refused,
// because the tests that went missing are the Stress ones at the bottom.

import { parseDcgmiJson } from "./dcgmi-json.js";
import { type DcgmiDiag, type DcgmiTest, toResult, worstResult } from "./dcgmi-types.js";
import { parseError, splitLines } from "./text.js";

export type { DcgmiDiag, DcgmiGpuResult, DcgmiResult, DcgmiTest } from "./dcgmi-types.js";

const KIND = "dcgmi";
const CHUNK = 45;

const BORDER = /^\+-+\+-+\+$/;
const HEADER = /^\|\s*Diagnostic\s*\|\s*Result\s*\|$/;
const HEADER_RULE = /^\+=+\+=+\+$/;
const SECTION = /^[|+]-{3,}\s+(\S(?:.*\S)?)\s+-+\+-+[|+]$/;
const TEST_RESULT = /^(Pass|Fail|Skip|Warn|Not Run)(?: - (?:(All)|GPUs?: (\d+(?:, \d+)*)))?$/;
const ENTITY_RESULT = /^([A-Za-z][A-Za-z_ ]*?)(\d+): (Pass|Fail|Skip|Warn|Not Run)$/;
const MORE_GPUS = /^(Pass|Fail|Skip|Warn) - GPUs?: (\d+(?:, \d+)*)$/;
const MESSAGE_NAME = /^(?:Warning|Error|Info)(?:: [A-Za-z][A-Za-z_ ]*\d+)?$/;
const RETURN_CODE = /^Code: \(\d+\)$/;

type Phase = "outside" | "header" | "header-rule" | "rows";

interface Message {
  test: DcgmiTest;
  index: number;
  chunks: string[];
}

interface State {
  diag: DcgmiDiag;
  phase: Phase;
  /** Column of the `|` between name and info, read from the table's first border. */
  split: number;
  category: string | null;
  test: DcgmiTest | null;
  message: Message | null;
  tableSeen: boolean;
  /** Collecting the lines of an `Error: ...` block printed instead of a table. */
  inError: boolean;
}

export function parseDcgmiDiag(text: string): DcgmiDiag {
  const lines = splitLines(text);
  const jsonStart = lines.findIndex((l) => l.startsWith("{"));
  const tableStart = lines.findIndex((l) => BORDER.test(l.trimEnd()));
  if (jsonStart >= 0 && (tableStart < 0 || jsonStart < tableStart))
    return parseDcgmiJson(lines, jsonStart);

  const state: State = {
    diag: { version: null, driver: null, tests: [], error: null },
    phase: "outside",
    split: -1,
    category: null,
    test: null,
    message: null,
    tableSeen: false,
    inError: false,
  };
  for (const [index, raw] of lines.entries()) parseLine(state, raw.trimEnd(), index + 1);
  if (state.phase !== "outside") {
    throw parseError(
      KIND,
      lines.length,
      "the closing border '+---+---+' of the table",
      "end of input",
    );
  }
  if (!state.tableSeen && state.diag.error === null) {
    const first = lines.find((l) => l.trim() !== "") ?? "";
    throw parseError(KIND, 1, "a dcgmi diag table, JSON document or 'Error:' line", first);
  }
  return state.diag;
}

function parseLine(state: State, line: string, lineNo: number): void {
  switch (state.phase) {
    case "outside":
      if (BORDER.test(line)) {
        state.phase = "header";
        state.split = line.indexOf("+", 1);
        state.tableSeen = true;
        state.inError = false;
      } else if (line.startsWith("Error: ") && state.diag.error === null) {
        state.diag.error = line.slice("Error: ".length);
        state.inError = true;
      } else if (state.inError && line.trim() !== "") {
        // dcgmi prints DCGM's system errors (e.g. the MIG refusals) on the lines after it.
        state.diag.error = `${state.diag.error}\n${line.trim()}`;
      } else {
        state.inError = false;
      }
      return;
    case "header":
      if (!HEADER.test(line)) throw parseError(KIND, lineNo, "'| Diagnostic | Result |'", line);
      state.phase = "header-rule";
      return;
    case "header-rule":
      if (!HEADER_RULE.test(line)) throw parseError(KIND, lineNo, "'+====+====+'", line);
      state.phase = "rows";
      return;
    case "rows":
      parseRowLine(state, line, lineNo);
  }
}

function parseRowLine(state: State, line: string, lineNo: number): void {
  const section = SECTION.exec(line);
  if (section) {
    state.category = section[1] ?? "";
    state.test = null;
    state.message = null;
    return;
  }
  if (BORDER.test(line)) {
    state.phase = "outside";
    state.category = null;
    state.test = null;
    state.message = null;
    return;
  }
  const expectedRow = "a table row '| name | info |'";
  if (!line.startsWith("|") || !line.endsWith("|") || line.length < 3) {
    throw parseError(KIND, lineNo, expectedRow, line);
  }
  // Cells are found at the border's column; fall back to the first `|` if a value overflowed.
  const split = line[state.split] === "|" ? state.split : line.indexOf("|", 1);
  if (split < 0 || split === line.length - 1) throw parseError(KIND, lineNo, expectedRow, line);
  const name = line.slice(1, split).trim();
  const field = line.slice(split + 2, -1); // drop the separator's padding space and the final `|`
  const value = field.trim();
  if (state.category === null)
    throw parseError(KIND, lineNo, "a section separator before rows", line);
  if (state.category === "Metadata") {
    if (name === "DCGM Version") state.diag.version = value;
    else if (name === "Driver Version Detected") state.diag.driver = value;
    return;
  }
  if (name === "") continueTest(state, field, value, line, lineNo);
  else if (MESSAGE_NAME.test(name)) startMessage(state, field, line, lineNo);
  else startTest(state, name, value, line, lineNo);
}

function startTest(state: State, name: string, value: string, line: string, lineNo: number): void {
  const m = TEST_RESULT.exec(value);
  const result = toResult(m?.[1] ?? "");
  if (!m || result === undefined) {
    throw parseError(
      KIND,
      lineNo,
      "a result 'Pass|Fail|Skip|Warn|Not Run[ - All| - GPU(s): ids]'",
      line,
    );
  }
  const test: DcgmiTest = {
    category: state.category ?? "",
    name,
    result,
    gpus: m[2] === "All" ? "all" : ids(m[3]).map((id) => ({ id, result })),
    info: [],
  };
  state.diag.tests.push(test);
  state.test = test;
  state.message = null;
}

function ids(list: string | undefined): number[] {
  return list === undefined ? [] : list.split(",").map((id) => Number(id.trim()));
}

function currentTest(state: State, line: string, lineNo: number): DcgmiTest {
  if (!state.test) throw parseError(KIND, lineNo, "a test row before this row", line);
  return state.test;
}

function startMessage(state: State, field: string, line: string, lineNo: number): void {
  const test = currentTest(state, line, lineNo);
  test.info.push(field.trimEnd());
  state.message = { test, index: test.info.length - 1, chunks: [field] };
}

function continueTest(
  state: State,
  field: string,
  value: string,
  line: string,
  lineNo: number,
): void {
  const test = currentTest(state, line, lineNo);
  const entity = ENTITY_RESULT.exec(value);
  const more = MORE_GPUS.exec(value);
  if (entity) {
    // DCGM 4: one row per entity; only GPUs are reported, CPU entities have no MIG meaning here.
    const result = toResult(entity[3] ?? "") ?? "Skip";
    if (entity[1] === "GPU" && test.gpus !== "all")
      test.gpus.push({ id: Number(entity[2]), result });
    state.message = null;
  } else if (more) {
    // DCGM 3 with mixed results: `Pass - GPUs: 0, 1` on the test row, `Fail - GPU: 2` below.
    const result = toResult(more[1] ?? "") ?? "Skip";
    if (test.gpus === "all") throw parseError(KIND, lineNo, "no per-GPU row after '- All'", line);
    test.gpus.push(...ids(more[2]).map((id) => ({ id, result })));
    test.result = worstResult(test.result, result);
    state.message = null;
  } else if (RETURN_CODE.test(value)) {
    test.info.push(value);
    state.message = null;
  } else if (state.message) {
    // A wrapped message: every chunk but the last is exactly 45 characters, trailing spaces included.
    const message = state.message;
    message.chunks.push(field);
    const full = message.chunks.map((c, i) =>
      i < message.chunks.length - 1 ? c.padEnd(CHUNK).slice(0, CHUNK) : c,
    );
    message.test.info[message.index] = full.join("").trimEnd();
  } else {
    throw parseError(KIND, lineNo, "an entity result 'GPU0: Pass' or a wrapped message", line);
  }
}
