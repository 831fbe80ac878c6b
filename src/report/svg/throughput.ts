// Each instance's stress throughput against its expected share: a bar of the TFLOP/s it
// measured and a mark where its SMs times the GPU's median TFLOP/s per SM would put it.
import { esc, FILL, type PictureStatus, STROKE, svgDoc, text } from "./common.js";

export interface ThroughputBar {
  label: string;
  profile: string;
  tflops: number | null;
  expected: number | null;
  status: PictureStatus;
}

export interface ThroughputInput {
  title: string;
  bars: readonly ThroughputBar[];
}

const LEFT = 170;
const WIDTH = 330;
const ROW = 22;

export function throughputSvg(t: ThroughputInput): string {
  const max = Math.max(1e-9, ...t.bars.flatMap((b) => [b.tflops ?? 0, b.expected ?? 0])) * 1.05;
  const scale = (v: number) => (v / max) * WIDTH;
  const body: string[] = [
    text(4, 14, t.title, { weight: "bold", size: 12 }),
    text(4, 30, "bar: measured TFLOP/s · mark: expected share (SMs × GPU median per SM)", {
      fill: "#555",
      size: 10,
    }),
  ];
  let y = 38;
  for (const b of t.bars) {
    body.push(text(4, y + 14, `${b.label} ${b.profile}`, { size: 10 }));
    const w = b.tflops === null ? 0 : scale(b.tflops);
    body.push(
      `<rect class="bar" data-label="${esc(b.label)}" data-tflops="${b.tflops ?? ""}" data-expected="${b.expected ?? ""}" data-status="${b.status}" x="${LEFT}" y="${y + 3}" width="${w.toFixed(1)}" height="${ROW - 8}" fill="${FILL[b.status]}" stroke="${STROKE[b.status]}"/>`,
    );
    if (b.expected !== null) {
      const x = LEFT + scale(b.expected);
      body.push(
        `<line class="expected" x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${y}" y2="${y + ROW - 2}" stroke="#111" stroke-width="2"/>`,
      );
    }
    const pct =
      b.tflops !== null && b.expected ? ` (${((b.tflops / b.expected) * 100).toFixed(1)} %)` : "";
    body.push(
      text(
        LEFT + WIDTH + 6,
        y + 14,
        b.tflops === null
          ? "no figure"
          : `${b.tflops.toFixed(2)}${b.expected !== null ? ` / ${b.expected.toFixed(2)}` : ""}${pct}`,
        { size: 10 },
      ),
    );
    y += ROW;
  }
  return svgDoc(LEFT + WIDTH + 140, y + 8, t.title, body);
}
