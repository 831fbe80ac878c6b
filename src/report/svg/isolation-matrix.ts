// A GPU's isolation matrix: for each fault, one row per aggressor and one column per instance;
// a cell holds the victim's throughput under the fault as a ratio to its baseline (or "died"),
// coloured by that victim's part of the scenario's victimsUnaffected verdict. The aggressor's own cell shows
// how its fault ended (faultContained, xidAttributed, recovered: the worst of them).
import { esc, FILL, type PictureStatus, STROKE, svgDoc, text } from "./common.js";

export interface MatrixCell {
  aggressor: string;
  victim: string;
  /** Under fault / baseline; null when the figures were not measured. */
  ratio: number | null;
  status: PictureStatus;
  /** The victim died under the fault: the cell says so (its printed throughput, often the
   * whole run's before it died, would read as a ratio near 1.00). */
  died?: boolean;
}

export interface MatrixFault {
  fault: string;
  aggressors: readonly string[];
  cells: readonly MatrixCell[];
  /** The aggressor's own outcome, by aggressor label. */
  own: Readonly<Record<string, PictureStatus>>;
}

export interface MatrixInput {
  title: string;
  /** Instance labels, the columns (and the rows' order). */
  instances: readonly string[];
  /** Shown beside the label (`3g.40gb at 4:4`). */
  names?: Readonly<Record<string, string>>;
  tolerance: number | null;
  faults: readonly MatrixFault[];
}

const LEFT = 170;
const COL = 78;
const ROW = 22;

export function isolationMatrixSvg(m: MatrixInput): string {
  const cols = m.instances.length;
  const body: string[] = [text(4, 14, m.title, { weight: "bold", size: 12 })];
  let y = 22;
  body.push(
    text(
      4,
      y + 10,
      `cell: victim's TFLOP/s under the fault ÷ its baseline${m.tolerance !== null ? ` (tolerance ${(m.tolerance * 100).toFixed(0)} %)` : ""}; rows: aggressor`,
      { fill: "#555", size: 10 },
    ),
  );
  y += 18;
  for (const f of m.faults) {
    y += 8;
    body.push(text(4, y + 12, `fault: ${f.fault}`, { weight: "bold" }));
    m.instances.forEach((v, i) => {
      body.push(
        text(LEFT + i * COL + COL / 2, y + 12, v, { anchor: "middle", size: 9, fill: "#333" }),
      );
    });
    y += 18;
    for (const a of f.aggressors) {
      body.push(text(4, y + 15, `${a}${m.names?.[a] ? `  ${m.names[a]}` : ""}`, { size: 10 }));
      m.instances.forEach((v, i) => {
        const x = LEFT + i * COL;
        if (v === a) {
          const st = f.own[a] ?? "none";
          body.push(
            `<rect class="own" data-aggressor="${esc(a)}" data-status="${st}" x="${x + 1}" y="${y + 1}" width="${COL - 2}" height="${ROW - 2}" fill="#fafafa" stroke="${STROKE[st]}" stroke-dasharray="3 2"/>`,
            text(x + COL / 2, y + 15, "aggressor", { anchor: "middle", size: 9, fill: "#555" }),
          );
          return;
        }
        const c = f.cells.find((k) => k.aggressor === a && k.victim === v);
        const died = c?.died === true;
        // A dead victim failed, whatever its verdict's share said.
        const st = died ? "failed" : (c?.status ?? "none");
        const shown = !c ? "–" : died ? "died" : c.ratio === null ? "n/a" : c.ratio.toFixed(2);
        body.push(
          `<rect class="cell" data-fault="${esc(f.fault)}" data-aggressor="${esc(a)}" data-victim="${esc(v)}" data-ratio="${died ? "" : (c?.ratio ?? "")}"${died ? ' data-died="true"' : ""} data-status="${st}" x="${x + 1}" y="${y + 1}" width="${COL - 2}" height="${ROW - 2}" fill="${FILL[st]}" stroke="${STROKE[st]}"/>`,
          text(x + COL / 2, y + 15, shown, {
            anchor: "middle",
            weight: st === "failed" ? "bold" : undefined,
          }),
        );
      });
      y += ROW;
    }
  }
  return svgDoc(LEFT + cols * COL + 10, y + 8, m.title, body);
}
