// A run writes into a folder of its own. Reusing `--out` (a nightly job with a fixed folder)
// must not mix two runs: allure-results of last night beside tonight's share history ids, and
// Allure shows them as retries of tonight's tests; checks.jsonl and measurements.jsonl are
// appended to. So the previous run's results are moved aside into <out>/previous-run/ (the
// one before is dropped, so the folder does not grow night after night). Trends across runs
// come from `slicecheck report`, which carries Allure's history beside the report.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RUN_CONTEXT_FILE } from "../report/context.js";

export const PREVIOUS_RUN = "previous-run";

/** What a run writes at the top of its folder. Only these move: `--out` may name a folder
 * that holds other things too, and those are not the run's to touch. */
const RUN_FILES = [
  RUN_CONTEXT_FILE,
  "checks.jsonl",
  "measurements.jsonl",
  "history.jsonl",
  "junit.xml",
  "results-summary.json",
  "verdicts.json",
  "allure-results",
];

/** The previous run's log folders, named by its run.json: one per node, and one per suite of
 * the user's (the built-in suites' logs sit in the node folders). */
function logFolders(dir: string): string[] {
  try {
    const ctx = JSON.parse(readFileSync(join(dir, RUN_CONTEXT_FILE), "utf8")) as {
      nodes?: { node?: unknown }[];
      suites?: unknown[];
    };
    const suites = (ctx.suites ?? []).map((s) =>
      typeof s === "string" ? s.replace(/[^\w.-]+/g, "_") : null,
    );
    return [...(ctx.nodes ?? []).map((n) => n.node), ...suites].filter(
      (n): n is string => typeof n === "string" && /^[\w.-]+$/.test(n) && !/^\.+$/.test(n),
    );
  } catch {
    return [];
  }
}

/** Moves the previous run's results in `dir` aside; returns what moved (empty when the folder
 * was new or held no run). */
export function freshOutDir(dir: string): string[] {
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true });
    return [];
  }
  const present = new Set(readdirSync(dir));
  const moving = [...RUN_FILES, ...logFolders(dir)].filter((n) => present.has(n));
  if (moving.length === 0) return [];
  const aside = join(dir, PREVIOUS_RUN);
  rmSync(aside, { recursive: true, force: true });
  mkdirSync(aside);
  for (const n of moving) renameSync(join(dir, n), join(aside, n));
  return moving;
}
