// `nvidia-smi topo -m`: the connection matrix between GPUs (and NICs), each GPU's CPU and NUMA
// affinity, and the legend. nvidia-smi separates the columns with tabs and prints the diagonal
// as ` X ` (club-3090#1229 capture); copies from web pages have the tabs expanded to spaces, so
// both are read. A GPU row holds one cell per device column, then CPU Affinity, NUMA Affinity and
// GPU NUMA ID where the header has them (an empty cell between the last two is a tab artefact).
// Cells: X, SYS, NODE, PHB, PXB, PIX, NV# (a bonded set of # NVLinks), SOC (older drivers).

import { parseError, significantLines } from "./text.js";

const KIND = "topo";
const CELL = /^(?:X|SYS|NODE|PHB|PXB|PIX|SOC|NV\d+)$/;
const TAIL = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"] as const;

export interface TopoGpu {
  /** `GPU0` → 0. */
  index: number;
  /** Device column → cell (`GPU1` → `NV18`; `NIC0` → `PIX`); the diagonal is `X`. */
  links: Record<string, string>;
  cpuAffinity: string | null;
  numaAffinity: string | null;
  gpuNumaId: string | null;
}

export interface TopoResult {
  /** Device columns in order: GPUs, then NICs or HCAs. */
  devices: string[];
  gpus: TopoGpu[];
  /** Legend key → meaning (`NV#` → `Connection traversing a bonded set of # NVLinks`). */
  legend: Record<string, string>;
}

function headerCells(text: string): string[] {
  return text
    .trim()
    .split(/\t+| {2,}/)
    .map((c) => c.trim())
    .filter(Boolean);
}

function rowCells(text: string): string[] {
  // Tabs: one cell per tab-separated field, blanks dropped. Spaces: no cell holds a space.
  return (text.includes("\t") ? text.split("\t") : text.trim().split(/\s+/))
    .map((c) => c.trim())
    .filter(Boolean);
}

/** The NVLink count of a cell (`NV18` → 18), 0 for any PCIe or system path. */
export function nvlinksOf(cell: string | undefined): number {
  const m = /^NV(\d+)$/.exec(cell ?? "");
  return m ? Number(m[1]) : 0;
}

export function parseTopo(text: string): TopoResult {
  const lines = significantLines(text);
  const h = lines.findIndex((l) => /^\s*GPU0\b/.test(l.text));
  if (h < 0) throw parseError(KIND, lines[0]?.no ?? 1, "the header row (GPU0 GPU1 …)", null);
  const header = headerCells(lines[h]!.text);
  const tailAt = header.findIndex((c) => (TAIL as readonly string[]).includes(c));
  const devices = tailAt < 0 ? header : header.slice(0, tailAt);
  const tail = tailAt < 0 ? [] : header.slice(tailAt);
  const gpus: TopoGpu[] = [];
  const legend: Record<string, string> = {};
  for (const l of lines.slice(h + 1)) {
    const lg = /^\s+(\S+)\s*=\s*(.+)$/.exec(l.text);
    if (lg) {
      legend[lg[1]!] = lg[2]!.trim();
      continue;
    }
    const cells = rowCells(l.text);
    const name = cells[0]!;
    if (!devices.includes(name)) continue; // Legend headings, NIC Legend entries.
    const matrix = cells.slice(1, devices.length + 1);
    const bad = matrix.find((c) => !CELL.test(c));
    if (matrix.length < devices.length || bad !== undefined)
      throw parseError(KIND, l.no, `${devices.length} cells of X/SYS/NODE/PHB/PXB/PIX/NV#`, l.text);
    const gm = /^GPU(\d+)$/.exec(name);
    if (!gm) continue;
    const rest = cells.slice(devices.length + 1);
    const at = (k: (typeof TAIL)[number]) => {
      const i = tail.indexOf(k);
      return i >= 0 ? (rest[i] ?? null) : null;
    };
    gpus.push({
      index: Number(gm[1]),
      links: Object.fromEntries(devices.map((d, i) => [d, matrix[i]!])),
      cpuAffinity: at("CPU Affinity"),
      numaAffinity: at("NUMA Affinity"),
      gpuNumaId: at("GPU NUMA ID"),
    });
  }
  if (gpus.length === 0) throw parseError(KIND, lines[h]!.no + 1, "a GPU row", null);
  return { devices, gpus, legend };
}
