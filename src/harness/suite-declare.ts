// Before a run touches a node it reads what each suite declares (`harness({ … })` at the top of
// its file): the file is syntax-checked, then loaded once against a run with no nodes, which
// only records the declaration. A file that does not parse, or imports what is not there, is bad
// input (exit 3) naming the file; anything else its top level throws without nodes is left to
// the real load, where it has its nodes and becomes that suite's broken check.

import { pathToFileURL } from "node:url";
import Mocha from "mocha";
import { CONTEXT_KEY, type SuiteContext } from "./api.js";
import type { HarnessOptions, RunOptionsView, SuiteRun } from "./api-types.js";
import { checkSyntax, loadError, modulePaths, prepareLoaders } from "./suite-loader.js";
import type { SuiteFile } from "./suites.js";

const NO_NODES = "a suite's declaration is read without nodes";

/** The run as a suite sees it while only its declaration is read: no nodes, nothing runs. */
function declaringRun(options: RunOptionsView): SuiteRun {
  const none = () => {
    throw new Error(NO_NODES);
  };
  return {
    options,
    nodes: [],
    workload: () => ({ start() {}, result: none }),
    checks: () => [],
    isolation: none,
    health: none,
    layout: none,
    regressions: none,
    slurmJobs: none,
    program: none,
    eachNode: none,
  };
}

/** Loads one file with a declaring context installed; returns what its harness() call said. */
async function declarationOf(
  f: SuiteFile,
  path: string,
  options: RunOptionsView,
  tag: string,
): Promise<HarnessOptions> {
  await checkSyntax(f);
  let needs: HarnessOptions = {};
  const ctx: SuiteContext = {
    harness: (o = {}) => {
      needs = { ...o };
      return declaringRun(options);
    },
    current: () => {
      throw new Error(NO_NODES);
    },
  };
  const g = globalThis as Record<symbol, unknown>;
  const before = g[CONTEXT_KEY];
  g[CONTEXT_KEY] = ctx;
  const mocha = new Mocha({ forbidOnly: false });
  const globals = globalThis as unknown as Mocha.MochaGlobals;
  mocha.suite.emit("pre-require", globals, f.identity, mocha);
  try {
    await import(`${pathToFileURL(path).href}?declare=${tag}`);
  } catch (e) {
    const bad = loadError(f, e);
    if (bad) throw bad;
  } finally {
    if (before === undefined) delete g[CONTEXT_KEY];
    else g[CONTEXT_KEY] = before;
    mocha.dispose();
  }
  return needs;
}

let declarations = 0;

/** Every suite with its declaration (`needs`); files read before keep theirs. */
export async function declareSuites(
  files: readonly SuiteFile[],
  options: RunOptionsView,
): Promise<SuiteFile[]> {
  const paths = modulePaths(files);
  await prepareLoaders(files, paths);
  const out: SuiteFile[] = [];
  // Its own module instance each time: an ES module is evaluated once per URL, and a cached
  // one would not call harness() again (a second run in one process would declare nothing).
  const tag = `${options.runId}-${++declarations}`;
  for (const [i, f] of files.entries())
    out.push(
      f.needs ? f : { ...f, needs: await declarationOf(f, paths[i] ?? f.path, options, tag) },
    );
  return out;
}

/** Whether any of the run's suites declared `key`. */
export function anyNeeds(files: readonly SuiteFile[], key: keyof HarnessOptions): boolean {
  return files.some((f) => !!f.needs?.[key]);
}

/** A suite's Allure labels, as it declared them, with the defaults of a site's own suite. */
export function labelsOf(f: Pick<SuiteFile, "needs"> | undefined, name: string) {
  const l = f?.needs?.labels ?? {};
  return {
    epic: l.epic ?? "Site checks",
    feature: l.feature ?? name,
    severity: l.severity ?? "normal",
  };
}
