// Ansible's host ranges (`gpu[01:16]`, `db-[a:f]`, `n[0:10:2]`), expanded exactly as Ansible's
// expand_hostname_range() does (ansible/inventory/helpers and the inventory docs, "Adding
// ranges of hosts"): the end is included, a leading zero pads every number to the width of the
// start (start and end must then have the same width), letters count through a..zA..Z, and
// several ranges in one name multiply.

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** True when the name holds a `[beg:end]` range, as Ansible's detect_range(). */
export function hasHostRange(name: string): boolean {
  const open = name.indexOf("[");
  const colon = name.indexOf(":", open);
  const close = name.indexOf("]", open);
  return open >= 0 && colon > open && close > colon;
}

/** Expands every range in `name`; throws an Error whose message says what is wrong (the
 * caller adds file and line). */
export function expandHostRange(name: string): string[] {
  if (!hasHostRange(name)) return [name];
  const open = name.indexOf("[");
  const close = name.indexOf("]", open);
  const head = name.slice(0, open);
  const body = name.slice(open + 1, close);
  const tail = name.slice(close + 1);
  const bounds = body.split(":");
  if (bounds.length !== 2 && bounds.length !== 3)
    throw new Error(`host range [${body}] must be [begin:end] or [begin:end:step]`);
  const beg = bounds[0] === "" ? "0" : bounds[0]!;
  const end = bounds[1]!;
  if (end === "") throw new Error(`host range [${body}] must give an end value`);
  const step = bounds.length === 3 ? Number(bounds[2]) : 1;
  if (!Number.isInteger(step) || step < 1)
    throw new Error(`host range [${body}]: the step must be a positive integer`);
  let seq: string[];
  const ib = beg.length === 1 ? LETTERS.indexOf(beg) : -1;
  const ie = end.length === 1 ? LETTERS.indexOf(end) : -1;
  if (ib >= 0 && ie >= 0) {
    if (ib > ie) throw new Error(`host range [${body}] must have begin <= end`);
    seq = [];
    for (let i = ib; i <= ie; i += step) seq.push(LETTERS[i]!);
  } else {
    if (!/^\d+$/.test(beg) || !/^\d+$/.test(end))
      throw new Error(`host range [${body}] must be numbers (01:16) or single letters (a:f)`);
    const padded = beg.length > 1 && beg.startsWith("0");
    if (padded && beg.length !== end.length)
      throw new Error(`host range [${body}] must give begin and end with the same width`);
    const from = Number(beg);
    const to = Number(end);
    if ((to - from) / step > 100_000) throw new Error(`host range [${body}] is too large`);
    seq = [];
    for (let i = from; i <= to; i += step)
      seq.push(padded ? String(i).padStart(beg.length, "0") : String(i));
  }
  return seq.flatMap((s) => expandHostRange(`${head}${s}${tail}`));
}
