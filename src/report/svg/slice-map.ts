// A GPU's slice map as a picture: memory slices 0..7 (0..3 on A30) across, the GPU's whole bar
// on top (letters as `slicecheck plan` prints them, src/mig/planner/render.ts), then one row per
// instance spanning the slices its placement holds.
import { esc, FILL, type PictureStatus, STROKE, svgDoc, text } from "./common.js";

export interface SliceMapInstance {
  label: string;
  profile: string;
  /** `start:size`; null for a whole GPU (MIG off). */
  placement: string | null;
  status?: PictureStatus;
}

export interface SliceMapInput {
  title: string;
  slices: number;
  instances: readonly SliceMapInstance[];
}

const CELL = 34;
const LEFT = 150;
const ROW = 20;

function span(p: string | null, slices: number): { start: number; size: number } {
  const m = p ? /^(\d+):(\d+)$/.exec(p) : null;
  if (!m) return { start: 0, size: slices };
  return { start: Number(m[1]), size: Number(m[2]) };
}

const letter = (i: number) => String.fromCharCode(65 + (i % 26));

export function sliceMapSvg(m: SliceMapInput): string {
  const width = LEFT + m.slices * CELL + 10;
  const height = 44 + ROW * (m.instances.length + 1) + 6;
  const body: string[] = [text(4, 14, m.title, { weight: "bold", size: 12 })];
  for (let s = 0; s < m.slices; s++)
    body.push(text(LEFT + s * CELL + CELL / 2, 32, s, { anchor: "middle", fill: "#555" }));
  const x = (s: number) => LEFT + s * CELL;
  // The whole bar: free slices stay blank, as `.` in the text map.
  let y = 38;
  body.push(text(4, y + 14, "memory slices", { fill: "#555" }));
  body.push(
    `<rect x="${x(0)}" y="${y}" width="${m.slices * CELL}" height="${ROW - 4}" fill="#fff" stroke="#999"/>`,
  );
  m.instances.forEach((inst, i) => {
    const { start, size } = span(inst.placement, m.slices);
    const st = inst.status ?? "none";
    body.push(
      `<rect x="${x(start)}" y="${y}" width="${size * CELL}" height="${ROW - 4}" fill="${FILL[st]}" stroke="${STROKE[st]}"/>`,
      text(x(start) + (size * CELL) / 2, y + 12, letter(i), { anchor: "middle", weight: "bold" }),
    );
  });
  m.instances.forEach((inst, i) => {
    y += ROW;
    const { start, size } = span(inst.placement, m.slices);
    const st = inst.status ?? "none";
    const where = inst.placement ?? "whole GPU";
    body.push(
      text(4, y + 13, `${letter(i)}  ${inst.label}`),
      `<rect class="gi" data-label="${esc(inst.label)}" data-profile="${esc(inst.profile)}" data-start="${start}" data-size="${size}" data-status="${st}" x="${x(start)}" y="${y}" width="${size * CELL}" height="${ROW - 4}" rx="3" fill="${FILL[st]}" stroke="${STROKE[st]}"/>`,
      text(x(start) + (size * CELL) / 2, y + 12, `${inst.profile} ${where}`, {
        anchor: "middle",
        size: size === 1 ? 8 : 10,
      }),
    );
  });
  return svgDoc(width, height, m.title, body);
}
