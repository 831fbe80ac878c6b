// Reads YAML while keeping a map back to line numbers, so every inventory error can name the
// file, the line and the path inside the document.
import { readFileSync } from "node:fs";
import { isMap, isSeq, LineCounter, type Node, parseDocument } from "yaml";
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
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const line = lineCounter.linePos(first.pos[0]).line;
    throw new SlicecheckError(
      "INVENTORY_YAML",
      `${file}:${line}: not valid YAML: ${first.message.split("\n")[0]}. Fix the YAML syntax at that line.`,
      { file, line },
    );
  }
  const lineOf = (path: readonly (string | number)[]): number | null => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n), true) as Node | undefined;
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
