// The one place src/ knows the built-in suites by name: which names `--suites` accepts and the
// order they run in. Everything else a run needs to know about a suite (does it inject faults,
// read the kernel log, need a layout, its report labels) the suite declares in its own file,
// through `harness({ … })` (see suite-declare.ts), so a user's suite is treated the same way.

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

/** What `run` runs without `--suites`. */
export const DEFAULT_SUITES = "stress";

/** The suite the harness's own apply check is reported under (`config X applied`), beside the
 * layout suite's checks of the same layout. */
export const APPLY_CHECK_SUITE: BuiltinSuite = "layout";
/** Its Allure labels when the layout suite itself is not run (which declares the same). */
export const APPLY_CHECK_LABELS = { epic: "MIG partition validation", feature: "Layout" };

/** The layout check right after the apply, workloads, faults, users' suites (5), then health
 * (it reads the kernel log the others added to) and regression (it compares what the others
 * measured). */
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

/** Where a users' suite runs among the built-in ones. */
const USER_RANK = 5;

export function isBuiltinSuite(name: string): name is BuiltinSuite {
  return (BUILTIN_SUITES as readonly string[]).includes(name);
}

export function suiteRank(f: { name: string; builtin: boolean }): number {
  return f.builtin && isBuiltinSuite(f.name) ? ORDER[f.name] : USER_RANK;
}
