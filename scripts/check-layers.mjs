#!/usr/bin/env node
// The layer rule (DESIGN "Layers"), checked in `npm run lint` after Biome: data flows top to
// bottom through LAYERS, so a file imports only from its own layer, the layers above it, and
// the shared base (src/util, src/errors.ts). A Biome pattern per folder cannot say it: a relative
// specifier names a folder only together with where the importer sits (`../verdicts/x.js` from
// src/chaos, `../../verdicts/x.js` from src/mig/apply), so each import is resolved to its file.
//
//   node scripts/check-layers.mjs [src-dir]      exit 1 and one line per violation
//
// Rules, each line naming file:line, the import and the rule:
//   upward        an import of a layer below the importer's;
//   simulator     the product importing the simulator (sim/, its own package);
//   unknown-layer a folder of src/ that LAYERS does not place;
//   cycle         a file-level import cycle. Static, type-only and dynamic imports all count: a
//                 cycle through types still ties the files' shapes to each other. (Biome's
//                 noImportCycles says the same in the editor; this is the one that names the
//                 whole cycle.)
// Imports are read with TypeScript's own pre-processor, so comments and strings are not imports.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The layers, top (imported by all below) to bottom. `base` is src/util and src/errors.ts. */
export const LAYERS = [
  "base",
  "inventory",
  "transport",
  "nvsmi",
  "mig",
  "workloads",
  "chaos",
  "verdicts",
  "store",
  "report",
  "harness",
  "cli",
];

/** Product files allowed to import the simulator: none. The simulator is its own package
 * (sim/); `slicecheck sim` loads it at run time through src/cli/sim-loader.ts, whose path is
 * computed, never a literal import (test/structure/sim-apart.test.ts checks the rest). */
export const SIM_ALLOWED = new Set();

const require = createRequire(import.meta.url);

/** The layer of a file by its path relative to src/: its first folder, `base` for the shared
 * ones, `sim` for the simulator, or undefined for a folder the table does not know. */
export function layerOf(rel) {
  const top = rel.split("/")[0];
  if (top === "util" || rel === "errors.ts") return "base";
  if (top === "sim") return "sim";
  return LAYERS.includes(top) ? top : undefined;
}

/** Every .ts file under `dir`, relative to it, with forward slashes, sorted. */
export function sourceFiles(dir, sub = "") {
  const out = [];
  for (const e of readdirSync(join(dir, sub), { withFileTypes: true })) {
    const rel = sub ? `${sub}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...sourceFiles(dir, rel));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(rel);
  }
  return out.sort();
}

/** The relative imports of one source text: `{spec, line}` for each static, re-export,
 * type-only and dynamic import whose specifier starts with "." (packages are not layers). */
export function importsOf(text) {
  const ts = require("typescript");
  const found = ts.preProcessFile(text, true, true).importedFiles;
  const lineStarts = ts.computeLineStarts(text);
  return found
    .filter((f) => f.fileName.startsWith("."))
    .map((f) => ({
      spec: f.fileName,
      line: ts.computeLineAndCharacterOfPosition(lineStarts, f.pos).line + 1,
    }));
}

/** The src-relative .ts file a relative specifier names (ESM sources import `./x.js`). */
function target(fromRel, spec) {
  const abs = resolve("/", dirname(fromRel), spec).slice(1);
  return abs.replace(/\.js$/, ".ts");
}

/** The import graph: for each file, its imports as `{to, spec, line}`. */
export function importGraph(files) {
  const graph = new Map();
  for (const [rel, text] of files) {
    graph.set(
      rel,
      importsOf(text).map((i) => ({ ...i, to: target(rel, i.spec) })),
    );
  }
  return graph;
}

/** The upward and simulator violations of the graph. */
export function layerViolations(graph) {
  const out = [];
  for (const [from, edges] of graph) {
    const fromLayer = layerOf(from);
    for (const e of edges) {
      const toLayer = layerOf(e.to);
      const where = `src/${from}:${e.line}`;
      if (fromLayer === undefined || toLayer === undefined) {
        const folder = fromLayer === undefined ? from : e.to;
        out.push({
          rule: "unknown-layer",
          where,
          spec: e.spec,
          why: `${folder}: folder not in LAYERS`,
        });
      } else if (toLayer === "sim" && fromLayer !== "sim") {
        if (!SIM_ALLOWED.has(from))
          out.push({
            rule: "simulator",
            where,
            spec: e.spec,
            why: "the product imports the simulator",
          });
      } else if (fromLayer !== "sim" && LAYERS.indexOf(toLayer) > LAYERS.indexOf(fromLayer)) {
        const why = `${fromLayer} may not import ${toLayer} (a layer below it)`;
        out.push({ rule: "upward", where, spec: e.spec, why });
      }
    }
  }
  return out;
}

/** The file-level import cycles: each strongly connected set of two or more files (or a file
 * importing itself), as its files (sorted) and one cycle through them from the first. Tarjan's algorithm,
 * iterative so a deep chain cannot overflow the stack. */
export function importCycles(graph) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const sccs = [];
  let next = 0;
  const succ = (v) => (graph.get(v) ?? []).map((e) => e.to).filter((w) => graph.has(w));
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work = [[root, 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const [v, i] = frame;
      const ws = succ(v);
      if (i < ws.length) {
        frame[1]++;
        const w = ws[i];
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(v)));
      }
      if (low.get(v) !== index.get(v)) continue;
      const scc = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || succ(v).includes(v)) sccs.push(scc.sort());
    }
  }
  return sccs.map((scc) => cyclePath(graph, scc));
}

/** One cycle through the set, as edges `{from, line, spec, to}` from its first file back to it
 * (breadth-first, so it is a shortest one). */
function cyclePath(graph, scc) {
  const members = new Set(scc);
  const start = scc[0];
  const via = new Map();
  const queue = [start];
  while (queue.length > 0 && !via.has(start)) {
    const v = queue.shift();
    for (const e of graph.get(v) ?? []) {
      if (!members.has(e.to) || via.has(e.to)) continue;
      via.set(e.to, { from: v, ...e });
      queue.push(e.to);
    }
  }
  const path = [];
  let at = start;
  do {
    const e = via.get(at);
    path.unshift(e);
    at = e.from;
  } while (at !== start);
  return { files: scc, path };
}

/** Every violation of `srcDir` as printable lines (empty when it keeps the rule). */
export function checkLayers(srcDir) {
  const files = sourceFiles(srcDir).map((rel) => [rel, readFileSync(join(srcDir, rel), "utf8")]);
  const graph = importGraph(files);
  const lines = layerViolations(graph).map(
    (v) => `${v.where}: import "${v.spec}": ${v.rule}: ${v.why}`,
  );
  for (const { files, path } of importCycles(graph)) {
    const steps = path.map((e) => `src/${e.from}:${e.line} imports "${e.spec}"`);
    const among =
      files.length > path.length
        ? ` (one of the cycles among ${files.map((f) => `src/${f}`).join(", ")})`
        : "";
    lines.push(`src/${path[0].from}:${path[0].line}: cycle: ${steps.join(" -> ")}${among}`);
  }
  return lines;
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (isMain) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const srcDir = resolve(process.argv[2] ?? join(root, "src"));
  const lines = checkLayers(srcDir);
  for (const l of lines) console.error(l);
  if (lines.length > 0) {
    console.error(
      `check-layers: ${lines.length} violation(s) in ${relative(process.cwd(), srcDir) || "."}` +
        " (layers, top to bottom: " +
        `${LAYERS.join(", ")}; a file imports only its own layer and those above it)`,
    );
    process.exit(1);
  }
}
