// The `MIG devices` and `Processes` sections of the default table. CIs of one GI share its
// memory cell: only the first shows it, and the row separator leaves the memory column open
// (GUIDE, A100 80GB 515 capture).

import { bar1MiB } from "../../../../src/mig/catalog/catalog.js";
import type { TableStyle } from "../layout.js";
import type { SimProcess } from "../state.js";
import { ciProfileOf, type GpuView, giProfileOf, giUsedMiB, migDevices } from "../view.js";
import { border, l, r, rule, title } from "./box.js";

interface MigGeometry {
  mem: number;
  /** [pad of used, pad of total, trailing blanks] for the memory and BAR1 lines. */
  memPads: readonly [number, number, number];
  barPads: readonly [number, number, number];
  header: readonly string[];
}

function migGeometry(style: TableStyle): MigGeometry {
  if (style === "t79") {
    return {
      mem: 22,
      memPads: [10, 8, 1],
      barPads: [10, 8, 1],
      header: [
        "| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |",
        "|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|",
      ],
    };
  }
  if (style === "t89") {
    return {
      mem: 32,
      memPads: [19, 8, 2],
      barPads: [19, 8, 2],
      header: [
        "| GPU  GI  CI  MIG |                   Memory-Usage |        Vol|      Shared           |",
        "|      ID  ID  Dev |                     BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |",
      ],
    };
  }
  if (style === "t91-580") {
    return {
      mem: 34,
      memPads: [19, 8, 4],
      barPads: [19, 8, 4],
      header: [
        "| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |",
        "|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
      ],
    };
  }
  // R550 (H100 NVL 550.127.06): the BAR1 line is aligned two columns right of the memory line.
  // R560 changed only the Shared header (AZ-H100NVL); R570/R575 are assumed to match R560.
  const shared =
    style === "t91-560"
      ? ["|        Shared         |", "| CE ENC  DEC  OFA  JPG |"]
      : ["|      Shared           |", "| CE ENC DEC OFA JPG    |"];
  return {
    mem: 34,
    memPads: [19, 8, 4],
    barPads: [21, 8, 2],
    header: [
      `| GPU  GI  CI  MIG |                     Memory-Usage |        Vol${shared[0]}`,
      `|      ID  ID  Dev |                       BAR1-Usage | SM     Unc${shared[1]}`,
    ],
  };
}

function pair(used: number, total: number, pads: readonly [number, number, number]): string {
  return `${r(`${used}MiB`, pads[0])} / ${r(`${total}MiB`, pads[1])}${" ".repeat(pads[2])}`;
}

export function formatMigDevices(
  views: readonly GpuView[],
  style: TableStyle,
  width: number,
  driver: string,
): string[] {
  const g = migGeometry(style);
  const line = (mem: string) => `+------------------+${mem}+-----------+-----------------------+`;
  const out = [
    border(width),
    title("MIG devices:", width),
    line("-".repeat(g.mem)),
    ...g.header,
    `|                  |${" ".repeat(g.mem)}|        ECC|                       |`,
    `|==================+${"=".repeat(g.mem)}+===========+=======================|`,
  ];
  const rows = views
    .filter((v) => v.gpu.mig.current)
    .flatMap((v) => {
      return migDevices(v).map((d, dev) => ({ v, ...d, dev }));
    });
  if (rows.length === 0) {
    out.push(`${"|  No MIG devices found".padEnd(width - 1)}|`, border(width));
    return out;
  }
  rows.forEach((row, i) => {
    const { v, gi, ci, dev } = row;
    const gp = giProfileOf(v, gi);
    const cp = ciProfileOf(v, gi, ci);
    const prev = rows[i - 1];
    const first = !prev || prev.gi !== gi;
    const facts = v.catalog?.facts;
    const mem = first ? pair(giUsedMiB(v, gi), gp.memoryMiB, g.memPads) : " ".repeat(g.mem);
    const bar1 = facts ? bar1MiB(facts, gi.size, driver) : 0;
    const bar = first ? pair(0, bar1, g.barPads) : " ".repeat(g.mem);
    const ids = `${r(v.gpu.index, 3)}${r(gi.id, 5)}${r(ci.id, 4)}${r(dev, 4)}  `;
    const eng = `${r(gp.ce, 3)}${r(gp.enc, 4)}${r(gp.dec, 5)}${r(gp.ofa, 5)}${r(gp.jpeg, 5)} `;
    out.push(
      `|${ids}|${mem}|${r(cp.sm, 3)}${r(0, 7)} |${eng}|`,
      `|                  |${bar}|           |                       |`,
    );
    const next = rows[i + 1];
    out.push(next && next.gi === gi ? line(" ".repeat(g.mem)) : line("-".repeat(g.mem)));
  });
  return out;
}

/** Blank line after the MIG section: a line of spaces before R580 (89 wide on R535/R550). */
export function spacerAfterMig(style: TableStyle, width: number): string {
  if (style === "t91-580") return "";
  return " ".repeat(style === "t79" ? width : 89);
}

interface ProcGeometry {
  pid: number;
  header: readonly string[];
}

function procGeometry(style: TableStyle): ProcGeometry {
  if (style === "t79") {
    return {
      pid: 10,
      header: [
        "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |",
        "|        ID   ID                                                   Usage      |",
      ],
    };
  }
  if (style === "t89") {
    return {
      pid: 10,
      header: [
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
      ],
    };
  }
  if (style === "t91-580") {
    return {
      pid: 16,
      header: [
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
      ],
    };
  }
  return {
    pid: 10,
    header: [
      "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
      "|        ID   ID                                                               Usage      |",
    ],
  };
}

/** Long process names lose their head: `...a/envs/x/bin/python`. */
function procName(name: string, w: number): string {
  return name.length > w ? `...${name.slice(name.length - (w - 3))}` : l(name, w);
}

function procRow(v: GpuView, p: SimProcess, pidWidth: number, width: number): string {
  const nameWidth = width - 39 - pidWidth;
  const gi = p.gi === null ? "N/A" : `${r(p.gi, 2)} `;
  const ci = p.ci === null ? "N/A" : `${p.ci} `;
  return (
    `|${r(v.gpu.index, 5)}${r(gi, 6)}${r(ci, 5)}${r(p.pid, pidWidth)}${r(p.type, 7)}   ` +
    `${procName(p.name, nameWidth)}${r(`${p.usedMiB}MiB`, 10)} |`
  );
}

export function formatProcesses(
  views: readonly GpuView[],
  style: TableStyle,
  width: number,
): string[] {
  const g = procGeometry(style);
  const out = [border(width), title("Processes:", width), ...g.header, rule(width)];
  const rows = views.flatMap((v) =>
    [...v.gpu.processes]
      .sort((a, b) => (a.gi ?? -1) - (b.gi ?? -1) || (a.ci ?? -1) - (b.ci ?? -1) || a.pid - b.pid)
      .map((p) => procRow(v, p, g.pid, width)),
  );
  if (rows.length === 0) out.push(`${"|  No running processes found".padEnd(width - 1)}|`);
  out.push(...rows, border(width));
  return out;
}
