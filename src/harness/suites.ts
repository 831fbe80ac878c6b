// Which suite files a run loads: built-in names (`stress`, `isolation` …, the files of the
// top-level suites/ folder) and users' files (`./site-checks.mjs`), resolved before any node is
// touched, in the order the registry gives (src/util/suite-registry.ts).
import { existsSync, statSync } from "node:fs";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../errors.js";
import { closest } from "../util/closest.js";
import { BUILTIN_SUITES, isBuiltinSuite, suiteRank } from "../util/suite-registry.js";
import type { HarnessOptions } from "./api-types.js";

export { BUILTIN_SUITES, type BuiltinSuite } from "../util/suite-registry.js";

export interface SuiteFile {
  /** `stress`, or the path as the user gave it. */
  name: string;
  /** Absolute path to load. */
  path: string;
  /** What Allure's history id hashes: stable across machines and checkouts. */
  identity: string;
  builtin: boolean;
  /** What the suite declared in its file (`harness({ … })`), once read (suite-declare.ts). */
  needs?: HarnessOptions;
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
    if (!isBuiltinSuite(item)) {
      const near = closest(item, BUILTIN_SUITES);
      throw new SlicecheckError(
        "USAGE",
        `--suites: unknown suite '${item}'${near ? ` (did you mean '${near}'?)` : ""}; built-in suites: ${BUILTIN_SUITES.join(", ")}; a file of your own is given by its path (./my-suite.mjs)`,
      );
    }
    const path = resolve(SUITES_DIR, `${item}.ts`);
    out.push({ name: item, path, identity: `suites/${item}.ts`, builtin: true });
  }
  return out
    .map((f, i) => ({ f, i }))
    .sort((a, b) => suiteRank(a.f) - suiteRank(b.f) || a.i - b.i)
    .map((x) => x.f);
}
