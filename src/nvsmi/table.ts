// The default `nvidia-smi` table, R450 to R580 layouts: the version banner, one record per GPU,
// the `MIG devices` section and the `Processes` section (with GI/CI columns under MIG). Guide
// excerpts often start at `MIG devices` or stop before `Processes`; both are accepted, since a
// section either appears whole or not at all.

import {
  cellsOf,
  checkCells,
  type Grid,
  isBorder,
  isRow,
  type Locus,
  locate,
  messageRow,
  readGrid,
  words,
} from "./grid.js";
import { PCI_BUS_ID, parseError, type SourceLine, significantLines } from "./text.js";
import type { TableGpu, TableMigDevice, TableProcess, TableResult } from "./types.js";

const KIND = "table";
const TIMESTAMP = /^\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4}$/;
const BUS_ID = new RegExp(`^${PCI_BUS_ID}$`);
const MEMORY = /^(\d+)MiB\s*\/\s*(\d+)MiB$/;

function need(header: SourceLine[], word: string): Locus {
  const at = locate(header, word);
  if (!at)
    throw parseError(KIND, header[0]!.no, `a '${word}' column in the header`, header[0]!.text);
  return at;
}

function cell(line: SourceLine, at: Locus): string {
  return (cellsOf(line.text)[at.cell] ?? "").trim();
}

function memory(line: SourceLine, text: string): [number | null, number | null] {
  if (text === "N/A") return [null, null];
  const m = MEMORY.exec(text);
  if (!m) throw parseError(KIND, line.no, "'<used>MiB / <total>MiB' or 'N/A'", text);
  return [Number(m[1]), Number(m[2])];
}

function int(line: SourceLine, token: string | undefined, what: string): number {
  if (token === undefined || !/^\d+$/.test(token)) throw parseError(KIND, line.no, what, line.text);
  return Number(token);
}

function gpuRecords(grid: Grid): TableGpu[] {
  const { header } = grid;
  const name = need(header, "Name");
  const bus = need(header, "Bus-Id");
  const mem = need(header, "Memory-Usage");
  const mig = locate(header, "MIG M.");
  const persistence = locate(header, "Persistence-M");
  return grid.records.map((record) => {
    checkCells(KIND, header, record);
    if (record.lines.length !== header.length) {
      const bad = record.lines[header.length] ?? record.end;
      throw parseError(KIND, bad.no, `a GPU record of ${header.length} rows`, bad.text);
    }
    const at = (l: Locus) => record.lines[l.row]!;
    const first = at(name);
    const pm = persistence && persistence.cell === name.cell ? "\\s+(On|Off|N/A)" : "()";
    const id = new RegExp(`^(\\d+)\\s+(.+?)${pm}$`).exec(cell(first, name));
    if (!id) throw parseError(KIND, first.no, "'<index>  <name>  <persistence>'", first.text);
    const busId = words(cell(at(bus), bus))[0];
    if (busId === undefined || !BUS_ID.test(busId)) {
      throw parseError(KIND, at(bus).no, "a PCI bus id", at(bus).text);
    }
    const [used, total] = memory(at(mem), cell(at(mem), mem));
    const migWord = mig ? words(cell(at(mig), mig)).at(-1) : undefined;
    return {
      index: Number(id[1]),
      name: id[2]!,
      busId,
      persistence: id[3] || null,
      migMode: migWord === undefined || migWord === "N/A" ? null : migWord,
      memoryUsedMiB: used,
      memoryTotalMiB: total,
    };
  });
}

function migRecords(grid: Grid): TableMigDevice[] {
  const { header } = grid;
  const ids = need(header, "GI");
  const mem = locate(header, "Memory-Usage");
  const sm = need(header, "SM");
  const out: TableMigDevice[] = [];
  for (const record of grid.records) {
    if (messageRow(record) === "No MIG devices found") continue;
    checkCells(KIND, header, record);
    const line = record.lines[0]!;
    const idWords = words(cell(line, ids));
    const n = words(cellsOf(header[ids.row]!.text)[ids.cell]!).length;
    if (idWords.length !== n) {
      throw parseError(KIND, line.no, `${n} ids (GPU, GI, CI, MIG Dev)`, line.text);
    }
    const [gpu, gi, ci, dev] = idWords.map((w) => int(line, w, "an integer id"));
    let used: number | null = null;
    let total: number | null = null;
    const memText = mem ? cell(line, mem) : "";
    if (memText !== "") {
      [used, total] = memory(line, memText);
    } else {
      // CIs of one GI share its memory cell: the cell spans their rows and is printed once.
      const owner = out.findLast((d) => d.gpu === gpu && d.gpuInstanceId === gi);
      if (!owner) throw parseError(KIND, line.no, "the GPU instance's memory usage", line.text);
      used = owner.memoryUsedMiB;
      total = owner.memoryTotalMiB;
    }
    out.push({
      gpu: gpu!,
      gpuInstanceId: gi!,
      computeInstanceId: ci!,
      device: dev!,
      memoryUsedMiB: used,
      memoryTotalMiB: total,
      sm: int(line, words(cell(line, sm))[sm.word], "the SM count"),
    });
  }
  return out;
}

function processRows(grid: Grid): TableProcess[] {
  const { header } = grid;
  const hasMig = locate(header, "GI") !== null;
  const lead = hasMig ? 5 : 3; // GPU [GI CI] PID Type
  const out: TableProcess[] = [];
  for (const record of grid.records) {
    if (messageRow(record) === "No running processes found") continue;
    for (const line of record.lines) {
      const text = (cellsOf(line.text)[0] ?? "").trim();
      const m = new RegExp(`^${"(\\S+)\\s+".repeat(lead)}(.*?)\\s+(\\S+)$`).exec(text);
      const t = m ? m.slice(1) : [];
      const type = t[lead - 1];
      if (!m || cellsOf(line.text).length !== 1 || !/^[CGM+]+$/.test(type ?? "")) {
        throw parseError(KIND, line.no, "'GPU [GI CI] PID Type Name Memory'", line.text);
      }
      const optId = (w: string | undefined) => (w === "N/A" ? null : int(line, w, "GI/CI id"));
      const memText = t[lead + 1]!;
      const mib = /^(\d+)MiB$/.exec(memText);
      if (!mib && memText !== "N/A") throw parseError(KIND, line.no, "'<n>MiB' or 'N/A'", memText);
      out.push({
        gpu: int(line, t[0], "a GPU index"),
        gpuInstanceId: hasMig ? optId(t[1]) : null,
        computeInstanceId: hasMig ? optId(t[2]) : null,
        pid: int(line, t[lead - 2], "a PID"),
        type: type!,
        name: t[lead]!,
        memoryMiB: mib ? Number(mib[1]) : null,
      });
    }
  }
  return out;
}

export function parseTable(text: string): TableResult {
  const lines = significantLines(text).map((l) => ({ no: l.no, text: l.text.trimEnd() }));
  const endNo = (lines.at(-1)?.no ?? 0) + 1;
  const result: TableResult = {
    driverVersion: null,
    cudaVersion: null,
    gpus: [],
    migDevices: [],
    processes: [],
  };
  let i = 0;
  const fail = (k: number, expected: string): never => {
    const l = lines[k];
    throw parseError(KIND, l?.no ?? endNo, expected, l?.text ?? null);
  };
  if (lines[0] && TIMESTAMP.test(lines[0].text.trim())) i++;
  while (i < lines.length) {
    if (!isBorder(lines[i]!.text)) fail(i, "a '+---+' border opening a section");
    const title = lines[i + 1];
    if (!title || !isRow(title.text)) fail(i + 1, "a section title row");
    const label = cellsOf(title!.text).join("|").trim();
    if (label.startsWith("NVIDIA-SMI")) {
      result.driverVersion = /Driver Version:\s*(\S+)/.exec(label)?.[1] ?? null;
      const cuda = /CUDA Version:\s*(\S+)/.exec(label)?.[1];
      result.cudaVersion = cuda === undefined || cuda === "N/A" ? null : cuda;
      if (result.driverVersion === null) fail(i + 1, "'Driver Version: <version>'");
      // The banner's lower border doubles as the GPU section's upper border.
      if (!lines[i + 2] || !isBorder(lines[i + 2]!.text)) fail(i + 2, "a border under the banner");
      const grid = readGrid(KIND, lines, i + 3, endNo);
      result.gpus.push(...gpuRecords(grid));
      i = grid.next;
    } else if (label === "MIG devices:") {
      if (!lines[i + 2] || !isBorder(lines[i + 2]!.text)) fail(i + 2, "a border under the title");
      const grid = readGrid(KIND, lines, i + 3, endNo);
      result.migDevices.push(...migRecords(grid));
      i = grid.next;
    } else if (label.startsWith("Processes:")) {
      // Pre-R450 tables print `GPU Memory` on the title row too.
      const grid = readGrid(KIND, lines, i + 2, endNo);
      result.processes.push(...processRows(grid));
      i = grid.next;
    } else {
      fail(i + 1, "'NVIDIA-SMI …', 'MIG devices:' or 'Processes:'");
    }
  }
  return result;
}
