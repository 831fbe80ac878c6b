// Pieces of nvidia-smi's box-drawn tables. Widths are whole line lengths, as measured on the
// captures (mig-reference.md §4).

export function border(width: number): string {
  return `+${"-".repeat(width - 2)}+`;
}

export function rule(width: number): string {
  return `|${"=".repeat(width - 2)}|`;
}

/** `| GPU instance profiles:` padded out to the right edge. */
export function title(text: string, width: number): string {
  return `${`| ${text}`.padEnd(width - 1)}|`;
}

/** Numbers and words right-aligned in a field of `w` characters. */
export function r(v: string | number, w: number): string {
  return String(v).padStart(w);
}

/** Left-aligned in a field of `w` characters. */
export function l(v: string | number, w: number): string {
  return String(v).padEnd(w);
}
