// Ansible's host ranges (`gpu[01:16]`, `db-[a:f]`, `n[0:10:2]`), expanded exactly as Ansible's
// expand_hostname_range() does (ansible/inventory/helpers and the inventory docs, "Adding
// ranges of hosts"): the end is included, a leading zero pads every number to the width of the
// start (start and end must then have the same width), letters count through a..zA..Z, and
// several ranges in one name multiply. Ansible sets no bound; slicecheck does (MAX_HOSTS): the
// size is computed from the bounds before a single name is made, so `gpu[1:1000]x[1:1000]`
// is refused at once instead of filling memory.

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** The most hosts one inventory file (or one name in it) may expand to. A cluster of this size
 * is far beyond one maintenance window; a bigger number is a typo or a hostile file. */
export const MAX_HOSTS = 100_000;

/** True when the name holds a `[beg:end]` range, as Ansible's detect_range(). */
export function hasHostRange(name: string): boolean {
  const open = name.indexOf("[");
  const colon = name.indexOf(":", open);
  const close = name.indexOf("]", open);
  return open >= 0 && colon > open && close > colon;
}

/** One range: what comes before it, and how to make its i-th value. */
interface Range {
  head: string;
  size: number;
  at(i: number): string;
}

/** The ranges of `name` and the text after the last one; nothing is expanded yet. */
function parse(name: string): { ranges: Range[]; tail: string } {
  const ranges: Range[] = [];
  let rest = name;
  while (hasHostRange(rest)) {
    const open = rest.indexOf("[");
    const close = rest.indexOf("]", open);
    ranges.push(rangeOf(rest.slice(0, open), rest.slice(open + 1, close)));
    rest = rest.slice(close + 1);
  }
  return { ranges, tail: rest };
}

function rangeOf(head: string, body: string): Range {
  const bounds = body.split(":");
  if (bounds.length !== 2 && bounds.length !== 3)
    throw new Error(`host range [${body}] must be [begin:end] or [begin:end:step]`);
  const beg = bounds[0] === "" ? "0" : bounds[0]!;
  const end = bounds[1]!;
  if (end === "") throw new Error(`host range [${body}] must give an end value`);
  const step = bounds.length === 3 ? Number(bounds[2]) : 1;
  if (!Number.isInteger(step) || step < 1)
    throw new Error(`host range [${body}]: the step must be a positive integer`);
  const ib = beg.length === 1 ? LETTERS.indexOf(beg) : -1;
  const ie = end.length === 1 ? LETTERS.indexOf(end) : -1;
  if (ib >= 0 && ie >= 0) {
    if (ib > ie) throw new Error(`host range [${body}] must have begin <= end`);
    return { head, size: Math.floor((ie - ib) / step) + 1, at: (i) => LETTERS[ib + i * step]! };
  }
  if (!/^\d+$/.test(beg) || !/^\d+$/.test(end))
    throw new Error(`host range [${body}] must be numbers (01:16) or single letters (a:f)`);
  const padded = beg.length > 1 && beg.startsWith("0");
  if (padded && beg.length !== end.length)
    throw new Error(`host range [${body}] must give begin and end with the same width`);
  const from = Number(beg);
  const to = Number(end);
  if (!Number.isSafeInteger(to)) throw new Error(`host range [${body}]: ${end} is too large`);
  const size = to < from ? 0 : Math.floor((to - from) / step) + 1;
  return {
    head,
    size,
    at: (i) =>
      padded ? String(from + i * step).padStart(beg.length, "0") : String(from + i * step),
  };
}

/** How many names `name` expands to, without making them. */
export function hostRangeSize(name: string): number {
  return parse(name).ranges.reduce((n, r) => n * r.size, 1);
}

/** Expands every range in `name`; throws an Error whose message says what is wrong (the
 * caller adds file and line), also when it would make more than `max` names. */
export function expandHostRange(name: string, max = MAX_HOSTS): string[] {
  const { ranges, tail } = parse(name);
  const size = ranges.reduce((n, r) => n * r.size, 1);
  if (size > max) {
    throw new Error(
      `expands to ${size.toLocaleString("en-US")} hosts; one inventory may name at most ${max.toLocaleString("en-US")} (split it into several inventories)`,
    );
  }
  let out = [""];
  for (const r of ranges) {
    const next: string[] = [];
    for (const prefix of out) for (let i = 0; i < r.size; i++) next.push(prefix + r.head + r.at(i));
    out = next;
  }
  return tail === "" ? out : out.map((s) => s + tail);
}
