// Which suite files a run loads: built-in names (`stress`, `isolation` …, the files of the
// top-level suites/ folder) and users' files (`./site-checks.mjs`), resolved before any node is
// touched, in the order that makes sense: the layout check right after the apply, workloads,
// faults, users' suites, then health (it reads the kernel log the others added to) and
// regression (it compares what the others measured).
import { existsSync, statSync } from "node:fs";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../errors.js";
import { closest } from "../util/closest.js";

export const BUILTIN_SUITES = [
  "layout",
  "stress",
  "nccl",
  "isolation",
  "slurm",
  "health",
  "regression",
] as const;
export type BuiltinSuite = (typeof BUILTIN_SUITES)[number];

const ORDER: Record<BuiltinSuite, number> = {
  layout: 0,
  stress: 1,
  nccl: 2,
  isolation: 3,
  // After the faults (a GPU they broke must not take probe jobs unnoticed), before health.
  slurm: 4,
  health: 8,
  regression: 9,
};

export interface SuiteFile {
  /** `stress`, or the path as the user gave it. */
  name: string;
  /** Absolute path to load. */
  path: string;
  /** What Allure's history id hashes: stable across machines and checkouts. */
  identity: string;
  builtin: boolean;
}

/** The top-level suites/ folder of this package, from src/harness or dist/harness alike. */
export const SUITES_DIR = fileURLToPath(new URL("../../suites/", import.meta.url));

function isPath(s: string): boolean {
  return /[/\\]/.test(s) || /\.(m|c)?(j|t)s$/.test(s);
}

export function resolveSuites(list: string, cwd = process.cwd()): SuiteFile[] {
  const items = list.split(",").map((x) => x.trim());
  if (items.length === 0 || items.some((x) => x === ""))
    throw new SlicecheckError(
      "USAGE",
      `--suites: ${list.trim() === "" ? "no suite given" : `an empty entry in '${list}'`}; give built-in names (${BUILTIN_SUITES.join(", ")}) or suite files, separated by commas`,
    );
  const out: SuiteFile[] = [];
  for (const item of [...new Set(items)]) {
    if (isPath(item)) {
      const path = resolve(cwd, item);
      if (!existsSync(path) || !statSync(path).isFile())
        throw new SlicecheckError(
          "USAGE",
          `--suites: suite file ${item} does not exist (looked for ${path}); give a .mjs, .js or .ts mocha file`,
          { file: item },
        );
      if (!/\.(m|c)?(j|t)s$/.test(path))
        throw new SlicecheckError(
          "USAGE",
          `--suites: ${item} is not a .mjs, .js or .ts file; a suite is a mocha file`,
          { file: item },
        );
      out.push({ name: item, path, identity: relative(cwd, path) || item, builtin: false });
      continue;
    }
    if (!(BUILTIN_SUITES as readonly string[]).includes(item)) {
      const near = closest(item, BUILTIN_SUITES);
      throw new SlicecheckError(
        "USAGE",
        `--suites: unknown suite '${item}'${near ? ` (did you mean '${near}'?)` : ""}; built-in suites: ${BUILTIN_SUITES.join(", ")}; a file of your own is given by its path (./my-suite.mjs)`,
      );
    }
    const path = resolve(SUITES_DIR, `${item}.ts`);
    out.push({ name: item, path, identity: `suites/${item}.ts`, builtin: true });
  }
  const rank = (f: SuiteFile) => (f.builtin ? ORDER[f.name as BuiltinSuite] : 5);
  return out
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map((x) => x.f);
}
