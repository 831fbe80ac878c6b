// `advise --svg`: the job-size distribution as two bar charts. Left, GPU-hours by GPUs per job
// (the seed's first look before slicing); right, the single-GPU jobs' hours by the smallest MIG
// profile they fit on the product. Each bar carries its job count and share.
import { esc, svgDoc, text } from "./common.js";

export interface HistogramBar {
  label: string;
  jobs: number;
  gpuHours: number;
}

export interface JobHistogramInput {
  title: string;
  bySize: readonly HistogramBar[];
  byProfile: readonly HistogramBar[];
  /** Under the title: the recommendation in a line. */
  verdict: string;
}

const BAR_W = 44;
const GAP = 10;
const PLOT_H = 160;
// Room above the plot for the headings and the tallest bar's two labels.
const TOP = 84;

function panel(x0: number, heading: string, bars: readonly HistogramBar[], fill: string): string[] {
  const max = Math.max(1e-9, ...bars.map((b) => b.gpuHours));
  const total = bars.reduce((s, b) => s + b.gpuHours, 0) || 1;
  const out = [text(x0, 50, heading, { weight: "bold" })];
  out.push(
    `<line x1="${x0}" x2="${x0 + bars.length * (BAR_W + GAP)}" y1="${TOP + PLOT_H}" y2="${TOP + PLOT_H}" stroke="#555"/>`,
  );
  bars.forEach((b, i) => {
    const h = (b.gpuHours / max) * PLOT_H;
    const x = x0 + i * (BAR_W + GAP);
    const y = TOP + PLOT_H - h;
    out.push(
      `<rect class="bar" data-label="${esc(b.label)}" data-jobs="${b.jobs}" data-gpu-hours="${b.gpuHours.toFixed(2)}" x="${x}" y="${y.toFixed(1)}" width="${BAR_W}" height="${h.toFixed(1)}" fill="${fill}" stroke="#37474f"/>`,
    );
    out.push(
      text(x + BAR_W / 2, y - 14, `${Math.round((b.gpuHours / total) * 100)} %`, {
        anchor: "middle",
        size: 10,
      }),
    );
    out.push(
      text(x + BAR_W / 2, y - 3, `${b.jobs} j`, { anchor: "middle", size: 9, fill: "#555" }),
    );
    out.push(text(x + BAR_W / 2, TOP + PLOT_H + 13, b.label, { anchor: "middle", size: 9 }));
  });
  return out;
}

export function jobHistogramSvg(h: JobHistogramInput): string {
  const leftW = Math.max(140, h.bySize.length * (BAR_W + GAP));
  const rightW = Math.max(140, h.byProfile.length * (BAR_W + GAP));
  const body = [
    text(4, 14, h.title, { weight: "bold", size: 12 }),
    text(4, 30, h.verdict, { size: 10, fill: "#555" }),
    ...panel(10, "GPU-hours by GPUs per job", h.bySize, "#90caf9"),
    ...panel(leftW + 50, "single-GPU hours by smallest profile", h.byProfile, "#a5d6a7"),
  ];
  return svgDoc(Math.max(leftW + rightW + 70, 420), TOP + PLOT_H + 26, h.title, body);
}
