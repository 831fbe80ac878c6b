// Reads YAML while keeping a map back to line numbers, so every inventory error can name the
// file, the line and the path inside the document.
import { readFileSync } from "node:fs";
import {
  type Document,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  visit,
} from "yaml";
import { SlicecheckError } from "../errors.js";
import { yamlToJs } from "../util/yaml.js";

export interface YamlSource {
  file: string;
  data: unknown;
  /** 1-based line of the value at `path`, or of the nearest ancestor that exists. */
  lineOf(path: readonly (string | number)[]): number | null;
}

export function readYaml(file: string, what: string): YamlSource {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new SlicecheckError(
      "INVENTORY_NOT_FOUND",
      `${file}: cannot read the ${what}: ${(err as NodeJS.ErrnoException).code ?? String(err)}. Check the path given with -i/--inventory.`,
      { file },
      { cause: err },
    );
  }
  const lineCounter = new LineCounter();
  // uniqueKeys off: the yaml package compares each key with every earlier one (quadratic, minutes
  // for 100 000 nodes); duplicateKey() does the same check with a Set.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const first = doc.errors[0] ?? duplicateKey(doc);
  if (first) {
    const line = lineCounter.linePos(first.pos[0]).line;
    throw new SlicecheckError(
      "INVENTORY_YAML",
      `${file}:${line}: not valid YAML: ${first.message.split("\n")[0]}. Fix the YAML syntax at that line.`,
      { file, line },
    );
  }
  const nodeAt = pathIndex(doc);
  const lineOf = (path: readonly (string | number)[]): number | null => {
    for (let n = path.length; n >= 0; n--) {
      const node = nodeAt(path.slice(0, n));
      const range = node && (isMap(node) || isSeq(node) || "range" in node) ? node.range : null;
      if (range) return lineCounter.linePos(range[0]).line;
    }
    return null;
  };
  return { file, data: yamlToJs(doc, lineCounter, file, "INVENTORY_YAML"), lineOf };
}

export function yamlError(
  src: YamlSource,
  path: readonly (string | number)[],
  message: string,
): SlicecheckError {
  const line = src.lineOf(path);
  const where = `${src.file}${line ? `:${line}` : ""}`;
  const at = path.length ? ` ${path.join(".")}:` : "";
  return new SlicecheckError("INVENTORY_SCHEMA", `${where}:${at} ${message}`, {
    file: src.file,
    line,
    path: path.join("."),
  });
}

/** The first key repeated in a mapping, as the yaml package's uniqueKeys reports it (scalar keys
 * equal by value), found with one Set per mapping. */
function duplicateKey(doc: Document): { message: string; pos: [number, number] } | undefined {
  let found: { message: string; pos: [number, number] } | undefined;
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) {
          const at = pair.key.range?.[0] ?? 0;
          found = { message: "Map keys must be unique", pos: [at, at + 1] };
          return visit.BREAK;
        }
        seen.add(pair.key.value);
      }
      return undefined;
    },
  });
  return found;
}

/** doc.getIn(path, true) in constant time per step: Document.getIn looks keys up one by one
 * (quadratic when every node of a 100 000-node inventory is located), so each mapping's keys are
 * indexed once, on first use. */
function pathIndex(doc: Document): (path: readonly (string | number)[]) => Node | undefined {
  const index = new WeakMap<object, Map<unknown, unknown>>();
  const child = (node: unknown, key: string | number): unknown => {
    if (isSeq(node)) return node.items[Number(key)];
    if (!isMap(node)) return undefined;
    let keys = index.get(node);
    if (!keys) {
      keys = new Map();
      for (const pair of node.items) {
        const k = isScalar(pair.key) ? pair.key.value : pair.key;
        if (!keys.has(k)) keys.set(k, pair.value);
        // YAML `1:` is a number key, reached from JS as "1"; both spellings find it.
        if (typeof k === "number" && !keys.has(String(k))) keys.set(String(k), pair.value);
      }
      index.set(node, keys);
    }
    return keys.get(key);
  };
  return (path) => {
    let node: unknown = doc.contents;
    for (const key of path) {
      node = child(node, key);
      if (node === undefined || node === null) return undefined;
    }
    return node as Node;
  };
}
