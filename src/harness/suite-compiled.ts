// The built-in suites as plain JavaScript. `npm run build` compiles suites/ to dist/suites
// (scripts/bundle.mjs compileSuites) with the hash of each source it compiled. While every
// source still has that hash, a run loads the compiled files: tsx's loader need not start (a
// hooks thread, and a transform of each file twice per run: about 0.35 s of a run's start-up on
// 2 cores). A suites/ file edited since the build (a user extending a built-in suite in a
// checkout), a missing manifest or a file that cannot be read sends every built-in suite back
// to its source under tsx, as before: the compiled copy is only ever the same code.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The manifest beside the compiled files: source path under suites/ → sha256 of its text. */
export const SOURCES_MANIFEST = "sources.json";

export interface CompiledSuites {
  /** suites/ */
  sourceDir: string;
  /** dist/suites */
  compiledDir: string;
}

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** Whether every source the manifest names still has the hash it was compiled from. */
export function compiledIsCurrent(dirs: CompiledSuites): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(dirs.compiledDir, SOURCES_MANIFEST), "utf8"));
    const entries = Object.entries(manifest as Record<string, unknown>);
    return (
      entries.length > 0 &&
      entries.every(([rel, hash]) => sha256(join(dirs.sourceDir, rel)) === hash)
    );
  } catch {
    return false;
  }
}

/** The compiled module of a built-in suite's source, or null when it must load from source. */
export function compiledPath(
  dirs: CompiledSuites,
  source: string,
  current: boolean,
): string | null {
  const rel = relative(dirs.sourceDir, source);
  if (!current || rel.startsWith("..") || !/\.ts$/.test(rel)) return null;
  return join(dirs.compiledDir, rel.replace(/\.ts$/, ".js"));
}

/** This install's folders: only a compiled slicecheck (dist/) has compiled suites; run from
 * source (tsx, the tests) the suites load from source. */
export function installedSuites(): CompiledSuites | null {
  if (!import.meta.url.endsWith(".js")) return null;
  return {
    sourceDir: fileURLToPath(new URL("../../suites/", import.meta.url)),
    compiledDir: fileURLToPath(new URL("../suites/", import.meta.url)),
  };
}
