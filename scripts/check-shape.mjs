#!/usr/bin/env node
// The size rule (DESIGN "Conventions": small modules, short functions), checked in `npm run lint`
// after the layer rule, so that it is kept by lint and not by memory: every source file of the
// product (src/) and of the simulator (sim/src/) at most MAX_FILE_LINES lines, and every function
// in them at most MAX_FUNCTION_LINES. Functions are found with TypeScript's own parser, so a brace
// in a string or a comment cannot end one, and every kind counts: declarations, methods,
// constructors, accessors, function expressions and arrow functions (a long callback handed to
// `.action(...)` is as long to read as a named function).
//
//   node scripts/check-shape.mjs [dir...]      exit 1 and one line per offender
//
// A function's size is its lines from its first token (after its doc comment, which is welcome
// however long) to its closing brace, both counted. A function inside a long function is reported
// on its own only when it is itself too long.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const MAX_FILE_LINES = 450;
export const MAX_FUNCTION_LINES = 80;

/**
 * Offenders older than the rule, each allowed at most its size when the rule came in (December
 * 2026, issue 21): a ratchet, so none grows and no new one appears. Keyed by file and function
 * name (names survive edits above them; line numbers do not). An entry that no longer offends is
 * itself reported, so the list only shrinks: delete the line once its function is split.
 */
export const GRANDFATHERED = new Map();

/** What the rule covers by default, relative to the repository root. */
export const SHAPE_DIRS = ["src", "sim/src"];

const require = createRequire(import.meta.url);

/** Every .ts file under `dir`, relative to it, with forward slashes, sorted. */
function tsFiles(dir, sub = "") {
  const out = [];
  for (const e of readdirSync(join(dir, sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...tsFiles(dir, rel));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(rel);
  }
  return out.sort();
}

/** The lines of a text as an editor numbers them: a final newline does not start another. */
export function lineCount(text) {
  if (text === "") return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** A readable name for a function node: its own name, the variable or property it is assigned
 * to, or what it is handed to (`<callback of .action>`), prefixed by its class for a member. */
function nameOf(ts, node, sf) {
  const text = (n) => (n ? n.getText(sf) : undefined);
  const owner = (n) => {
    const cls = n.parent;
    return ts.isClassLike(cls) && cls.name ? `${cls.name.text}.` : "";
  };
  if (ts.isConstructorDeclaration(node)) return `${owner(node)}constructor`;
  if (ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)) {
    return `${owner(node)}${text(node.name)}`;
  }
  if (node.name) return text(node.name);
  const p = node.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) {
    return `${ts.isPropertyDeclaration(p) ? owner(p) : ""}${text(p.name)}`;
  }
  if (ts.isCallExpression(p)) {
    const callee = ts.isPropertyAccessExpression(p.expression)
      ? `.${p.expression.name.text}`
      : text(p.expression);
    return `<callback of ${callee}>`;
  }
  return "<anonymous>";
}

/** The functions of one source text longer than `max` lines, as `{line, name, lines}`. */
export function longFunctions(text, fileName = "x.ts", max = MAX_FUNCTION_LINES) {
  const ts = require("typescript");
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out = [];
  const lineOf = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node) => {
    // A body is what makes a function long; an overload or abstract signature has none.
    if (ts.isFunctionLike(node) && node.body) {
      const first = lineOf(node.getStart(sf));
      const lines = lineOf(node.getEnd()) - first + 1;
      if (lines > max) out.push({ line: first, name: nameOf(ts, node, sf), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Every offender under `dirs` (absolute), as printable lines naming the file relative to
 * `base` (empty when all keep the rule). `allowed` maps `file name` (or `file <file>`) to the
 * size an old offender may keep; one that grows past it, or no longer offends, is reported. */
export function checkShape(dirs, base = process.cwd(), allowed = new Map()) {
  const lines = [];
  const seen = new Set();
  const judge = (where, key, size, max, what) => {
    if (size <= max) return;
    const cap = allowed.get(key);
    if (cap !== undefined) seen.add(key);
    if (cap !== undefined && size <= cap) return;
    const more = cap !== undefined ? `; it may not grow past the ${cap} it had` : "";
    lines.push(`${where}: ${what}: ${size} lines (at most ${max}${more})`);
  };
  for (const dir of dirs) {
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      lines.push(`${relative(base, dir) || "."}: no such folder`);
      continue;
    }
    for (const rel of tsFiles(dir)) {
      const text = readFileSync(join(dir, rel), "utf8");
      const file = relative(base, join(dir, rel));
      judge(`${file}:1`, `${file} <file>`, lineCount(text), MAX_FILE_LINES, "file (split it)");
      for (const f of longFunctions(text, rel)) {
        judge(
          `${file}:${f.line}`,
          `${file} ${f.name}`,
          f.lines,
          MAX_FUNCTION_LINES,
          `function ${f.name}`,
        );
      }
    }
  }
  for (const key of allowed.keys()) {
    if (!seen.has(key) && dirs.some((d) => key.startsWith(`${relative(base, d)}/`)))
      lines.push(`${key}: keeps the rule now (or is gone): delete it from GRANDFATHERED`);
  }
  return lines;
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (isMain) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const args = process.argv.slice(2);
  const dirs = args.length > 0 ? args.map((d) => resolve(d)) : SHAPE_DIRS.map((d) => join(root, d));
  const lines = checkShape(dirs, args.length > 0 ? process.cwd() : root, GRANDFATHERED);
  for (const l of lines) console.error(l);
  if (lines.length > 0) {
    console.error(
      `check-shape: ${lines.length} offender(s): a file holds at most ${MAX_FILE_LINES} lines and a ` +
        `function at most ${MAX_FUNCTION_LINES}; split it into named helpers or modules`,
    );
    process.exit(1);
  }
}
