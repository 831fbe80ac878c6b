// Loading a suite file: the loaders it may need (tsx for `.ts`, `slicecheck/suite` resolvable
// from anywhere), and a syntax check first, so that a file that cannot even be parsed is bad
// input naming its file:line, not a run that dies with "Unexpected end of input".
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { SlicecheckError } from "../errors.js";
import {
  type CompiledSuites,
  compiledIsCurrent,
  compiledPath,
  installedSuites,
} from "./suite-compiled.js";
import type { SuiteFile } from "./suites.js";

const TS = /\.(c|m)?ts$/;

/** The module each suite file loads from: a built-in suite's compiled copy while its sources are
 * those it was compiled from (suite-compiled.ts), else the file itself. */
export function modulePaths(
  files: readonly SuiteFile[],
  dirs: CompiledSuites | null = files.some((f) => f.builtin) ? installedSuites() : null,
): string[] {
  const current = dirs !== null && compiledIsCurrent(dirs);
  return files.map((f) => {
    const compiled = f.builtin && dirs ? compiledPath(dirs, f.path, current) : null;
    return compiled && existsSync(compiled) ? compiled : f.path;
  });
}

/** The loaders the modules need: tsx for a `.ts` one, and the fallback resolution of
 * `slicecheck/suite` for any but the compiled built-in suites, which resolve it from this
 * package as they are. Neither starts unless needed: each is a hooks thread for the process. */
export async function prepareLoaders(
  files: readonly SuiteFile[],
  paths: readonly string[],
): Promise<void> {
  if (files.some((f, i) => !f.builtin || paths[i] === f.path)) await ensureApiResolvable();
  if (paths.some((p) => TS.test(p))) await ensureTsx();
}

let tsxReady: Promise<void> | null = null;
/** `.ts` suites need tsx's loader, unless this process already runs under it (the tests). */
export function ensureTsx(): Promise<void> {
  tsxReady ??= (async () => {
    const argv = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].join(" ");
    if (/\btsx\b/.test(argv)) return;
    const { register } = await import("tsx/esm/api");
    register();
  })();
  return tsxReady;
}

let apiHook = false;
/** A suite file outside any project that installs slicecheck (a folder of site checks with no
 * node_modules) still finds `slicecheck/suite`: when Node's own resolution fails, a resolve
 * hook answers with this copy's API module. Installed once, only as a fallback. */
export async function ensureApiResolvable(): Promise<void> {
  if (apiHook) return;
  apiHook = true;
  const target = new URL(`./api${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)
    .href;
  const hook = `export async function resolve(s, c, next) {
    try { return await next(s, c); } catch (e) {
      if (s === "slicecheck/suite" || s === "slicecheck") return { url: ${JSON.stringify(target)}, shortCircuit: true };
      throw e;
    }
  }`;
  const { register } = await import("node:module");
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

interface EsbuildMessage {
  text: string;
  location: { file: string; line: number; column: number; lineText: string } | null;
}
type Transform = (
  code: string,
  o: { loader: string; format: string; sourcefile: string },
) => Promise<unknown>;

let esbuild: Promise<Transform> | null = null;
/** esbuild, the parser tsx itself uses, resolved from tsx's own folder (tsx depends on it). */
function transformer(): Promise<Transform> {
  esbuild ??= (async () => {
    const here = createRequire(import.meta.url);
    const from = createRequire(here.resolve("tsx/package.json"));
    const mod = (await import(pathToFileURL(from.resolve("esbuild")).href)) as {
      transform?: Transform;
      default?: { transform: Transform };
    };
    return (mod.transform ?? mod.default?.transform) as Transform;
  })();
  return esbuild;
}

function loaderOf(path: string): string {
  return /\.(c|m)?ts$/.test(path) ? "ts" : "js";
}

/** Bad input (exit 3) when the file does not parse: its file:line:column and the parser's words. */
export async function checkSyntax(f: SuiteFile): Promise<void> {
  // The built-in suites ship with slicecheck and are checked by its own tests: the check (an
  // esbuild service started for it) is for the user's files, and costs every run its start-up.
  if (f.builtin) return;
  const source = readFileSync(f.path, "utf8");
  const transform = await transformer();
  try {
    await transform(source, { loader: loaderOf(f.path), format: "esm", sourcefile: f.name });
  } catch (e) {
    const first = (e as { errors?: EsbuildMessage[] }).errors?.[0];
    if (!first) throw e;
    const at = first.location
      ? `${f.name}:${first.location.line}:${first.location.column + 1}`
      : f.name;
    throw new SlicecheckError(
      "SUITE_LOAD",
      `suite file ${at}: ${first.text}${first.location?.lineText.trim() ? ` (\`${first.location.lineText.trim()}\`)` : ""}; fix the file, nothing was touched`,
      { file: f.name, line: first.location?.line ?? null },
    );
  }
}

/** A suite file whose import failed before it could run (a module it imports is missing). */
export function loadError(f: SuiteFile, e: unknown): SlicecheckError | null {
  const code = (e as { code?: string }).code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") return null;
  return new SlicecheckError(
    "SUITE_LOAD",
    `suite file ${f.name} cannot be loaded: ${(e as Error).message}`,
    { file: f.name },
  );
}
