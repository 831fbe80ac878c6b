// What the report's pictures share: escaping, the verdict colours (the same on the page, in the
// PDF and in Allure), and the status names they are keyed by. Hand-made SVG: a slice map, a
// matrix and bars need no charting library, and the strings print in Chromium as they are.
import type { Status } from "../../util/status.js";

/** A cell's status: a check's, or none where no check judged it. */
export type PictureStatus = Status | "none";

/** Cell fills (light, so that the figure printed in the cell stays readable) and strokes. */
export const FILL: Readonly<Record<PictureStatus, string>> = {
  passed: "#c8e6c9",
  failed: "#ef9a9a",
  broken: "#ffcc80",
  skipped: "#e0e0e0",
  none: "#f5f5f5",
};
export const STROKE: Readonly<Record<PictureStatus, string>> = {
  passed: "#2e7d32",
  failed: "#b71c1c",
  broken: "#e65100",
  skipped: "#757575",
  none: "#bdbdbd",
};

export function esc(s: unknown): string {
  return String(s).replace(
    /[<>&"']/g,
    (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", '"': "quot", "'": "apos" }[c as "<"]};`,
  );
}

/** An SVG document with a title (read by screen readers and shown as a tooltip). */
export function svgDoc(width: number, height: number, title: string, body: string[]): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11" role="img"><title>${esc(title)}</title>\n${body.join("\n")}\n</svg>`;
}

export function text(
  x: number,
  y: number,
  s: unknown,
  o: { anchor?: "start" | "middle" | "end"; weight?: string; size?: number; fill?: string } = {},
): string {
  const attrs = [
    `x="${x}"`,
    `y="${y}"`,
    o.anchor ? `text-anchor="${o.anchor}"` : "",
    o.weight ? `font-weight="${o.weight}"` : "",
    o.size ? `font-size="${o.size}"` : "",
    o.fill ? `fill="${o.fill}"` : "",
  ].filter(Boolean);
  return `<text ${attrs.join(" ")}>${esc(s)}</text>`;
}
