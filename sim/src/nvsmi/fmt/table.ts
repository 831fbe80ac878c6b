// The default `nvidia-smi` table: timestamp, banner and one block per GPU, then the MIG devices
// and processes sections (table-sections.ts). Layouts measured on the captures: 79 columns up to
// R525, 89 on R535, 91 from R550; R580 opens the GPU block with `+` instead of `|`.

import type { Layout, TableStyle } from "../layout.js";
import type { SimState } from "../state.js";
import { gpuUtilPercent } from "../tenant.js";
import { displayName, type GpuView, gpuUsedMiB } from "../view.js";
import { l, r } from "./box.js";
import { formatMigDevices, formatProcesses, spacerAfterMig } from "./table-sections.js";

export interface TableGeometry {
  width: number;
  /** Widths of the three GPU cells. */
  cells: readonly [number, number, number];
}

export function geometry(style: TableStyle): TableGeometry {
  if (style === "t79") return { width: 79, cells: [31, 22, 22] };
  if (style === "t89") return { width: 89, cells: [41, 22, 22] };
  return { width: 91, cells: [41, 24, 22] };
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `Wed Jul 29 18:17:43 2026` followed by seven spaces, as every raw capture shows. */
export function tableTimestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  const day = String(d.getDate()).padStart(2);
  const time = `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${day} ${time} ${d.getFullYear()}       `;
}

function cellsLine(g: TableGeometry, edge: string, fill: string): string {
  return `${edge}${g.cells.map((w) => fill.repeat(w)).join("+")}+`;
}

function banner(state: SimState, style: TableStyle, g: TableGeometry): string[] {
  const wide = style !== "t79";
  const ver = l(state.driver, wide ? 23 : 13);
  const drv = l(state.driver, g.width === 91 ? 15 : 13);
  return [
    `+${"-".repeat(g.width - 2)}+`,
    `| NVIDIA-SMI ${ver}Driver Version: ${drv}CUDA Version: ${l(state.cuda, 9)}|`,
    cellsLine(g, style === "t91-580" ? "+" : "|", "-"),
  ];
}

function gpuHeader(style: TableStyle, g: TableGeometry): string[] {
  const lines =
    style === "t79"
      ? [
          "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
          "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
          "|                               |                      |               MIG M. |",
        ]
      : style === "t89"
        ? [
            "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
            "|                                         |                      |               MIG M. |",
          ]
        : [
            "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
            "|                                         |                        |               MIG M. |",
          ];
  return [...lines, cellsLine(g, "|", "=").replace(/\+$/, "|")];
}

function truncName(name: string, w: number): string {
  return name.length > w ? `${name.slice(0, w - 3)}...` : name.padEnd(w);
}

/**
 * The MIG M. cell. A pending mode differs from the current one between `-mig` and a reset; no
 * capture shows that cell, a user describes it as the mode "with a *" (k8s-device-plugin#343),
 * so the pending mode is printed with a star.
 */
function migCell(v: GpuView): string {
  if (!v.catalog) return "N/A";
  const word = (on: boolean) => (on ? "Enabled" : "Disabled");
  const { current, pending } = v.gpu.mig;
  return current === pending ? word(current) : `${word(pending)}*`;
}

function gpuBlock(v: GpuView, style: TableStyle, g: TableGeometry, layout: Layout): string[] {
  const t = v.gpu.telemetry;
  const [c1, c2] = g.cells;
  const mig = v.gpu.mig.current;
  const name = displayName(v, layout);
  const pers = v.gpu.persistenceMode ? "On" : "Off";
  const ecc = r(mig ? "On" : "0", 21);
  const fan = r(t.fanPercent === null ? "N/A" : `${t.fanPercent}%`, 4);
  const draw = `${Math.trunc(t.powerDrawW)}W`;
  const cap = `${v.powerCapW}W`;
  const used = `${gpuUsedMiB(v)}MiB`;
  const total = `${v.memoryMiB}MiB`;
  const util = r(mig ? "N/A" : `${gpuUtilPercent(v.gpu)}%`, 8);
  const head = `|${r(v.gpu.index, 4)}  `;
  let row1: string;
  let power: string;
  let memory: string;
  if (style === "t79") {
    row1 = `${head}${truncName(name, 18)}  ${l(pers, 3)}  | ${v.gpu.pciBusId} Off |`;
    power = `${r(draw, 7)} / ${r(cap, 4)} `;
    memory = `${r(used, 10)} / ${r(total, 8)} `;
  } else {
    const bus = style === "t89" ? ` ${v.gpu.pciBusId} Off ` : `   ${v.gpu.pciBusId} Off `;
    // Names longer than 27 are cut to 24 and "..." (`NVIDIA RTX PRO 6000 Blac...    On`).
    row1 = `${head}${truncName(name, 27).padEnd(31)}${l(pers, 4)}|${bus}|`;
    power = style === "t89" ? `${r(draw, 17)} / ${r(cap, 4)} ` : `${r(draw, 16)} / ${r(cap, 5)} `;
    memory =
      style === "t89" ? `${r(used, 10)} / ${r(total, 8)} ` : `${r(used, 11)} / ${r(total, 9)} `;
  }
  const row2 = `|${fan}${r(`${t.tempC}C`, 6)}${r(t.perf, 6)}${power}|${memory}|${util}${r("Default", 13)} |`;
  const row3 = `|${" ".repeat(c1)}|${" ".repeat(c2)}|${r(migCell(v), 21)} |`;
  return [`${row1}${ecc} |`, row2, row3, cellsLine(g, "+", "-")];
}

export function formatTable(
  state: SimState,
  views: readonly GpuView[],
  layout: Layout,
  now: Date,
): string[] {
  const style = layout.table;
  const g = geometry(style);
  const out = [tableTimestamp(now), ...banner(state, style, g), ...gpuHeader(style, g)];
  for (const v of views) out.push(...gpuBlock(v, style, g, layout));
  out.push("");
  if (views.some((v) => v.gpu.mig.current)) {
    out.push(...formatMigDevices(views, style, g.width, state.driver));
    out.push(spacerAfterMig(style, g.width));
  }
  out.push(...formatProcesses(views, style, g.width));
  return out;
}
