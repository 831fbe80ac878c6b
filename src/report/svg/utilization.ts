// `slicecheck observe --svg`: per GPU and GPU instance a strip of its busy share over the
// observation (one bar per sample, a dashed line at the seed's 50 %), and its figures beside
// it. A unit whose source reads no busy share (nvidia-smi under MIG) shows its memory in use
// against what it offers instead, in another colour, and says so.
import { esc, svgDoc, text } from "./common.js";

export interface UtilizationStrip {
  label: string;
  /** 0-100 per sample; null where not read. */
  busy: readonly (number | null)[];
  /** Memory in use per sample, shown when no busy share was read. */
  memUsed: readonly (number | null)[];
  memOffered: number | null;
  /** The figures, one line (under-50 share, mean, p95, memory, idle). */
  figures: string;
}

const LEFT = 190;
const WIDTH = 360;
const ROW = 46;
const BAR_H = 34;
const BUSY = "#1565c0";
const MEMORY = "#8e24aa";

function strip(s: UtilizationStrip, y: number): string[] {
  const read = s.busy.some((b) => b !== null);
  const values = read
    ? s.busy
    : s.memUsed.map((m) => (m === null || !s.memOffered ? null : (100 * m) / s.memOffered));
  const n = Math.max(1, values.length);
  const w = WIDTH / n;
  const out = [
    `<rect x="${LEFT}" y="${y}" width="${WIDTH}" height="${BAR_H}" fill="#f5f5f5" stroke="#bdbdbd"/>`,
  ];
  values.forEach((v, i) => {
    if (v === null) return;
    const h = (Math.max(0, Math.min(100, v)) / 100) * BAR_H;
    out.push(
      `<rect class="${read ? "busy" : "memory"}" data-value="${v.toFixed(1)}" x="${(LEFT + i * w).toFixed(2)}" y="${(y + BAR_H - h).toFixed(2)}" width="${Math.max(0.5, w - 0.5).toFixed(2)}" height="${h.toFixed(2)}" fill="${read ? BUSY : MEMORY}"/>`,
    );
  });
  const half = y + BAR_H / 2;
  out.push(
    `<line class="half" x1="${LEFT}" x2="${LEFT + WIDTH}" y1="${half}" y2="${half}" stroke="#d32f2f" stroke-dasharray="4 3"/>`,
  );
  out.push(text(4, y + 14, s.label, { size: 11, weight: "bold" }));
  out.push(
    text(4, y + 28, read ? "busy %" : "memory in use % (busy not read)", { size: 9, fill: "#555" }),
  );
  out.push(text(LEFT, y + BAR_H + 10, s.figures, { size: 9 }));
  return out;
}

export function utilizationSvg(title: string, strips: readonly UtilizationStrip[]): string {
  const body: string[] = [
    text(4, 14, title, { weight: "bold", size: 12 }),
    text(4, 30, "one bar per sample, left to right over the observation · dashed: 50 %", {
      fill: "#555",
      size: 10,
    }),
  ];
  let y = 40;
  for (const s of strips) {
    body.push(`<g class="unit" data-label="${esc(s.label)}">`, ...strip(s, y), "</g>");
    y += ROW + 8;
  }
  return svgDoc(LEFT + WIDTH + 20, y + 4, title, body);
}
