// Node selectors: `gpu[01-04]`, `gpu[01-03,07]`, `gpu*`, `@group`, `tag:NAME`, `all`, and
// comma lists of these. A term that matches nothing is an error: a typo must not silently
// shrink a maintenance run.
import { SlicecheckError } from "../errors.js";
import type { Inventory, NodeSpec } from "./types.js";

export function selectNodes(inv: Inventory, selector: string | undefined): NodeSpec[] {
  if (selector === undefined || selector.trim() === "" || selector.trim() === "all")
    return inv.nodes;
  const wanted = new Set<string>();
  for (const term of splitTerms(selector)) {
    for (const name of matchTerm(inv, term)) wanted.add(name);
  }
  return inv.nodes.filter((n) => wanted.has(n.name));
}

/** Splits on commas that are not inside brackets, so `gpu[01-02,05],@a100` is two terms. */
export function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of selector) {
    if (ch === "[") depth++;
    if (ch === "]") depth--;
    if (ch === "," && depth === 0) {
      terms.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  terms.push(cur.trim());
  if (depth !== 0 || terms.some((t) => t === "")) {
    throw selectorError(selector, "unbalanced brackets or an empty term");
  }
  return terms;
}

function matchTerm(inv: Inventory, term: string): string[] {
  if (term === "all") return inv.nodes.map((n) => n.name);
  if (term.startsWith("@")) {
    const members = inv.groups[term.slice(1)];
    if (!members) {
      throw selectorError(
        term,
        `no group '${term.slice(1)}'; groups: ${Object.keys(inv.groups).join(", ") || "(none)"}`,
      );
    }
    return members;
  }
  if (term.startsWith("tag:")) {
    const tag = term.slice(4);
    const hits = inv.nodes.filter((n) => n.tags.includes(tag)).map((n) => n.name);
    if (hits.length === 0) {
      const tags = [...new Set(inv.nodes.flatMap((n) => n.tags))];
      throw selectorError(term, `no node has tag '${tag}'; tags: ${tags.join(", ") || "(none)"}`);
    }
    return hits;
  }
  const names = expandRanges(term);
  const hits: string[] = [];
  for (const pattern of names) {
    const re = globToRegExp(pattern);
    const matched = inv.nodes.filter((n) => re.test(n.name)).map((n) => n.name);
    if (matched.length === 0) {
      throw selectorError(
        term,
        `no node named '${pattern}' in ${inv.file}; nodes: ${preview(inv)}`,
      );
    }
    hits.push(...matched);
  }
  return hits;
}

/** `gpu[01-03,07]` → gpu01 gpu02 gpu03 gpu07, keeping the zero padding of the range's start. */
export function expandRanges(term: string): string[] {
  const m = /^(.*?)\[([^\]]+)\](.*)$/.exec(term);
  if (!m) return [term];
  const [, head, body, tail] = m as unknown as [string, string, string, string];
  const out: string[] = [];
  for (const part of body.split(",")) {
    const r = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!r) throw selectorError(term, `'${part}' is not a number or a range like 01-04`);
    const from = Number(r[1]);
    const to = r[2] === undefined ? from : Number(r[2]);
    if (to < from || to - from > 10_000)
      throw selectorError(term, `range ${part} runs backwards or is too large`);
    const width = r[1]!.length;
    for (let i = from; i <= to; i++) {
      for (const rest of expandRanges(tail))
        out.push(`${head}${String(i).padStart(width, "0")}${rest}`);
    }
  }
  return out;
}

function globToRegExp(pattern: string): RegExp {
  const escaped = pattern
    .replace(/[.+^${}()|\\]/g, "\\$&")
    .replaceAll("*", ".*")
    .replaceAll("?", ".");
  return new RegExp(`^${escaped}$`);
}

function preview(inv: Inventory): string {
  const names = inv.nodes.map((n) => n.name);
  return names.length > 8
    ? `${names.slice(0, 8).join(", ")}, … (${names.length})`
    : names.join(", ");
}

function selectorError(term: string, why: string): SlicecheckError {
  return new SlicecheckError("SELECTOR", `--nodes ${JSON.stringify(term)}: ${why}`, { term });
}
