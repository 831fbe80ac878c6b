// YAML to plain data with a bound on alias expansion, for every file slicecheck reads (inventory,
// layouts, simulated cluster specs). A handful of nested aliases expand to billions of nodes (a
// "billion laughs" file): the yaml package counts expansions against maxAliasCount and throws a
// ReferenceError, which must reach the user as bad input naming the file and line, not as a
// stack trace.
import { type Document, isAlias, type LineCounter, visit } from "yaml";
import { type ErrorCode, SlicecheckError } from "../errors.js";

/** Alias expansions allowed in one file: plenty for anchors shared between a few nodes. */
export const MAX_YAML_ALIASES = 100;

/** 1-based line of the first alias (`*name`) in the document, or 1. */
function firstAliasLine(doc: Document, lineCounter: LineCounter): number {
  let line = 1;
  visit(doc, {
    Alias(_key, node) {
      if (isAlias(node) && node.range) {
        line = lineCounter.linePos(node.range[0]).line;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return line;
}

export function yamlToJs(
  doc: Document,
  lineCounter: LineCounter,
  file: string,
  code: ErrorCode,
): unknown {
  // A tag the YAML 1.2 core schema does not know (`!!python/object:os.system`, `!custom`) asks
  // a loader to build something: refused, not read as the text it wraps.
  const tag = doc.warnings.find((w) => w.code === "TAG_RESOLVE_FAILED");
  if (tag) {
    const line = lineCounter.linePos(tag.pos[0]).line;
    const name = /Unresolved tag: (\S+)/.exec(tag.message)?.[1] ?? "?";
    throw new SlicecheckError(
      code,
      `${file}:${line}: YAML tag ${name} is not one slicecheck reads (only plain values: strings, numbers, booleans, lists, mappings); remove the tag.`,
      { file, line },
    );
  }
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (e) {
    if (!(e instanceof ReferenceError)) throw e;
    const line = firstAliasLine(doc, lineCounter);
    const why = /Excessive alias count/.test(e.message)
      ? `the YAML aliases expand to more than ${MAX_YAML_ALIASES} copies (a file built to exhaust memory looks like this); refused. Write the values out instead of nesting *aliases`
      : `a YAML alias cannot be resolved (${e.message}); define the &anchor before its *alias`;
    throw new SlicecheckError(code, `${file}:${line}: ${why}.`, { file, line });
  }
}
