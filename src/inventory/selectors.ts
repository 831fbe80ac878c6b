// Node selectors: `gpu[01-04]`, `gpu[01-03,07]`, `gpu*`, `@group`, `tag:NAME`, `all`, comma
// lists of these, and `!term` to leave nodes out (`@a100,!gpu03`; only `!` terms: all nodes but
// those). A term that matches nothing is an error, and so is an empty selector or term: a typo
// must not silently shrink, or widen, a maintenance run. foldNames() is the inverse, for
// printing node lists the way pdsh and clush do (`sim[01-03,05]`).
import { SlicecheckError } from "../errors.js";
import type { Inventory, NodeSpec } from "./types.js";

/** Called, instead of an error, for an exclusion that names nothing (`exec -x`). */
export type OnUnknown = (why: string) => void;

/** The nodes `selector` names, minus those `exclude` names (`exec -x`), in inventory order.
 * No selector means every node. With `onUnknown`, a name, group or tag in `exclude` that the
 * inventory does not have is reported to it and ignored, as pdsh ignores an unknown `-x` host
 * (leaving out a node that is not there changes nothing); the rest of its term still applies.
 * An empty or malformed exclusion stays an error, and so does any unknown name in `selector`. */
export function selectNodes(
  inv: Inventory,
  selector: string | undefined,
  exclude?: string,
  onUnknown?: OnUnknown,
): NodeSpec[] {
  const wanted =
    selector === undefined
      ? new Set(inv.nodes.map((n) => n.name))
      : namesOf(inv, selector, "--nodes");
  if (exclude !== undefined)
    for (const n of namesOf(inv, exclude, "--exclude", onUnknown)) wanted.delete(n);
  return inv.nodes.filter((n) => wanted.has(n.name));
}

function namesOf(
  inv: Inventory,
  selector: string,
  option: string,
  onUnknown?: OnUnknown,
): Set<string> {
  if (selector.trim() === "") {
    throw selectorError(
      selector,
      "is empty; give node names, ranges, @group, tag:NAME or all",
      option,
    );
  }
  const terms = splitTerms(selector, option);
  const positive = terms.filter((t) => !t.startsWith("!"));
  const wanted = new Set<string>(positive.length ? [] : inv.nodes.map((n) => n.name));
  for (const term of positive)
    for (const name of matchTerm(inv, term, option, onUnknown)) wanted.add(name);
  for (const term of terms.filter((t) => t.startsWith("!"))) {
    if (term === "!") throw selectorError(term, "'!' needs a term after it, e.g. !gpu03", option);
    for (const name of matchTerm(inv, term.slice(1), option, onUnknown)) wanted.delete(name);
  }
  return wanted;
}

/** Splits on commas that are not inside brackets, so `gpu[01-02,05],@a100` is two terms. */
export function splitTerms(selector: string, option = "--nodes"): string[] {
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
  if (depth !== 0) throw selectorError(selector, "unbalanced brackets", option);
  if (terms.some((t) => t === "")) {
    throw selectorError(
      selector,
      "has an empty term (two commas in a row, or one at an end); remove it",
      option,
    );
  }
  return terms;
}

function matchTerm(inv: Inventory, term: string, option: string, onUnknown?: OnUnknown): string[] {
  // An unknown name is an error, or with onUnknown a warning and no nodes.
  const unknown = (t: string, why: string): string[] => {
    const e = selectorError(t, why, option);
    if (!onUnknown) throw e;
    onUnknown(e.message);
    return [];
  };
  if (term === "all") return inv.nodes.map((n) => n.name);
  if (term.startsWith("@")) {
    const members = inv.groups[term.slice(1)];
    if (!members) {
      return unknown(
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
      return unknown(term, `no node has tag '${tag}'; tags: ${tags.join(", ") || "(none)"}`);
    }
    return hits;
  }
  const names = expandRanges(term);
  const hits: string[] = [];
  for (const pattern of names) {
    const re = globToRegExp(pattern);
    const matched = inv.nodes.filter((n) => re.test(n.name)).map((n) => n.name);
    if (matched.length === 0)
      unknown(term, `no node named '${pattern}' in ${inv.file}; nodes: ${preview(inv)}`);
    hits.push(...matched);
  }
  return hits;
}

/** `gpu[01-03,07]` → gpu01 gpu02 gpu03 gpu07, keeping the zero padding of the range's start.
 * Ansible's `gpu[01:03]` reads the same. */
export function expandRanges(term: string): string[] {
  const m = /^(.*?)\[([^\]]+)\](.*)$/.exec(term);
  if (!m) return [term];
  const [, head, body, tail] = m as unknown as [string, string, string, string];
  const out: string[] = [];
  for (const part of body.split(",")) {
    const r = /^(\d+)(?:[-:](\d+))?$/.exec(part.trim());
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

function selectorError(term: string, why: string, option = "--nodes"): SlicecheckError {
  return new SlicecheckError("SELECTOR", `${option} ${JSON.stringify(term)}: ${why}`, { term });
}

/** Node names folded into pdsh/clush host lists: `sim01 sim02 sim03 sim05` → `sim[01-03,05]`,
 * in order of first appearance. expandRanges() reads the result back to the same names. */
export function foldNames(list: readonly string[]): string {
  const groups = new Map<string, { head: string; tail: string; nums: string[] }>();
  const plain: string[] = [];
  const order: string[] = [];
  for (const name of list) {
    const m = /^(.*?)(\d+)(\D*)$/.exec(name);
    if (!m) {
      plain.push(name);
      order.push(`=${name}`);
      continue;
    }
    const key = `${m[1]}\0${m[3]}`;
    let g = groups.get(key);
    if (!g) {
      g = { head: m[1]!, tail: m[3]!, nums: [] };
      groups.set(key, g);
      order.push(key);
    }
    if (!g.nums.includes(m[2]!)) g.nums.push(m[2]!);
  }
  return order
    .map((key) => {
      if (key.startsWith("=")) return key.slice(1);
      const g = groups.get(key)!;
      if (g.nums.length === 1) return `${g.head}${g.nums[0]}${g.tail}`;
      const sorted = [...g.nums].sort((a, b) => Number(a) - Number(b) || a.length - b.length);
      const runs: string[][] = [];
      for (const n of sorted) {
        const run = runs[runs.length - 1];
        const first = run?.[0];
        // A run continues while the next number is the previous plus one and prints with the
        // run's start width, so that expandRanges() gives back the same strings.
        if (
          run &&
          first !== undefined &&
          Number(n) === Number(run[run.length - 1]) + 1 &&
          n === String(Number(n)).padStart(first.length, "0")
        )
          run.push(n);
        else runs.push([n]);
      }
      const body = runs
        .map((r) => (r.length === 1 ? r[0] : `${r[0]}-${r[r.length - 1]}`))
        .join(",");
      return `${g.head}[${body}]${g.tail}`;
    })
    .join(",");
}
