// What keeps the simulator apart from the product: no source file of the product (outside the
// simulator's folder) reads a SLICECHECK_SIM_* variable or names a module of the simulator,
// except the one loader the `slicecheck sim …` commands go through. Pure: it reads files only,
// so the test can run it on a planted tree too.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

export interface SimApartRules {
  /** The product's sources (src/). */
  productDir: string;
  /** The simulator's folder; files under it are the simulator's own and are not scanned. */
  simDir: string;
  /** Files (absolute) allowed to name the simulator: the sim commands' loader. */
  loaders: readonly string[];
  /** Where file:line is given from (the repository root). */
  root: string;
}

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
// A quoted relative path (an import, an export … from, import(), require(), new URL(…)), or
// the simulator's package name: whatever reaches the simulator's files from the product.
const QUOTED = /(["'`])((?:\.{1,2}\/|@slicecheck\/sim\b)[^"'`\s]*)\1/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return SOURCE.test(e.name) ? [p] : [];
  });
}

function inside(path: string, dir: string): boolean {
  const r = relative(dir, path);
  return r === "" || (!r.startsWith("..") && !r.startsWith(sep) && r !== "..");
}

/** Every leak as `file:line: what`, in file order; empty when the product keeps apart. */
export function simLeaks(rules: SimApartRules): string[] {
  const simDir = resolve(rules.simDir);
  const loaders = new Set(rules.loaders.map((l) => resolve(l)));
  const out: string[] = [];
  for (const file of sourceFiles(resolve(rules.productDir)).sort()) {
    if (inside(file, simDir)) continue;
    const where = relative(rules.root, file);
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (line.includes("SLICECHECK_SIM"))
          out.push(`${where}:${i + 1}: reads a SLICECHECK_SIM variable: ${line.trim()}`);
        if (loaders.has(file)) return;
        for (const m of line.matchAll(QUOTED)) {
          const spec = m[2] ?? "";
          const named = spec.startsWith("@slicecheck/sim")
            ? true
            : inside(resolve(dirname(file), spec), simDir);
          if (named) out.push(`${where}:${i + 1}: names the simulator (${spec}): ${line.trim()}`);
        }
      });
  }
  return out;
}
