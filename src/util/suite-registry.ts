// The one place src/ knows the built-in suites by name (test/structure/suite-names.test.ts keeps
// it so): which names `--suites` accepts, the order they run in, and what the reports read their
// checks as. It sits in the shared base so that every layer that must tell one suite's checks
// from another's (the verdicts, the store, the reports, the harness, the CLI) imports it from
// here. Everything a run needs to know to *run* a suite (does it inject faults, read the kernel
// log, need a layout, its Allure labels) the suite declares in its own file, through
// `harness({ … })` (src/harness/suite-declare.ts), so a user's suite is treated the same way.

export const BUILTIN_SUITES = [
  "layout",
  "stress",
  "nccl",
  // issue 22: train-step on 3g/4g instances and whole cards, recorded for diff.
  "training",
  // issue 23: the stress in a container per MIG instance, images of different CUDA versions.
  "containers",
  "isolation",
  "slurm",
  "health",
  "regression",
  // serving: issue 22 item 3 (request latency per instance)
  "serving",
] as const;
export type BuiltinSuite = (typeof BUILTIN_SUITES)[number];

/** The suite of the harness's own checks (a node it could not reach, a job that never ran): no
 * file of suites/, but the reports list its checks like a suite's. */
export const HARNESS_SUITE = "run";

/** What the reports read a suite's checks as. A report asks for the role ("the isolation
 * matrix"), never for a name, so a renamed suite moves here only. */
export type SuiteRole =
  /** Its checks judge the applied layout: the harness's apply check is reported beside them,
   * and each carries the GPU's slice map. */
  | "layout"
  /** Its checks measure each instance's throughput against its share of the GPU. */
  | "throughput"
  /** Its checks are the isolation matrix: per GPU the fault scenarios (aggressor × fault kind),
   * the route, the tenants verified; verdicts.json and the records' verdicts table. */
  | "matrix"
  /** Its checks include tenant confinement (a tenant's job reaches only its own instance). */
  | "confinement";

const ROLES: Record<SuiteRole, BuiltinSuite> = {
  layout: "layout",
  throughput: "stress",
  matrix: "isolation",
  confinement: "slurm",
};

/** The suite that plays `role`. */
export const suiteOf = (role: SuiteRole): BuiltinSuite => ROLES[role];

/** Whether checks of `suite` play `role`. */
export const hasRole = (suite: string, role: SuiteRole): boolean => ROLES[role] === suite;

/** What `run` runs without `--suites`. */
export const DEFAULT_SUITES = "stress";

/** The suite the harness's own apply check is reported under (`config X applied`), beside the
 * layout suite's checks of the same layout. */
export const APPLY_CHECK_SUITE: BuiltinSuite = ROLES.layout;
/** Its Allure labels when the layout suite itself is not run (which declares the same). */
export const APPLY_CHECK_LABELS = { epic: "MIG partition validation", feature: "Layout" };

/** The suites whose checks the pure verdicts decide outside mocha (src/verdicts/health.ts,
 * src/store/regression.ts): the suite turns each into its running test's outcome. */
export const VERDICT_SUITE = {
  layout: "layout",
  health: "health",
  regression: "regression",
} as const satisfies Partial<Record<BuiltinSuite, BuiltinSuite>>;
export type VerdictSuite = (typeof VERDICT_SUITE)[keyof typeof VERDICT_SUITE];

/** The layout check right after the apply, workloads, faults, users' suites (5), then health
 * (it reads the kernel log the others added to) and regression (it compares what the others
 * measured). */
const ORDER: Record<BuiltinSuite, number> = {
  layout: 0,
  stress: 1,
  nccl: 2,
  // Workloads before the faults: its step times are measured on undisturbed GPUs.
  training: 2.5,
  // Containers after the bare workloads, before the faults: its shares are measured undisturbed.
  containers: 2.7,
  isolation: 3,
  // After the faults (a GPU they broke must not take probe jobs unnoticed), before health.
  slurm: 4,
  // Beside stress: both measure every instance with its neighbours busy.
  serving: 1.5,
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

/** How the sign-off page and the coverage ledger list a built-in suite. */
export interface SuiteSignoff {
  /** The ledger names it whether it ran or not (a reviewer sees what was left out). */
  ledger: boolean;
  /** Its requirement row's claim on the sign-off page; null for the matrix, whose rows are
   * per fault kind. */
  requirement: string | null;
  /** Its row appears only when it produced checks (an optional suite not run is no gap). */
  rowOnlyWhenRun: boolean;
}

/** In the reports' order: what a reviewer reads top to bottom. */
export const SIGNOFF: readonly (readonly [BuiltinSuite, SuiteSignoff])[] = [
  [
    "layout",
    {
      ledger: true,
      requirement: "every GPU matches the layout's config (MIG mode, instances, placements)",
      rowOnlyWhenRun: false,
    },
  ],
  [
    "stress",
    {
      ledger: true,
      requirement: "every instance computes without errors at its expected share of the GPU",
      rowOnlyWhenRun: false,
    },
  ],
  [
    "nccl",
    {
      ledger: false,
      requirement: "nccl-tests completes on every instance without wrong results",
      rowOnlyWhenRun: true,
    },
  ],
  [
    "training",
    {
      ledger: false,
      requirement:
        "a training step (GEMMs and an all_reduce) runs on every 3g/4g instance and the whole cards without wrong results",
      rowOnlyWhenRun: true,
    },
  ],
  [
    "containers",
    {
      ledger: false,
      requirement:
        "every instance's container starts, sees only its instance and computes at its share, images of different CUDA versions side by side",
      rowOnlyWhenRun: true,
    },
  ],
  ["isolation", { ledger: true, requirement: null, rowOnlyWhenRun: false }],
  [
    "health",
    {
      ledger: true,
      requirement:
        "the GPUs stay healthy: the driver answers, no uncorrected ECC error, no unexplained Xid",
      rowOnlyWhenRun: false,
    },
  ],
  [
    "regression",
    {
      ledger: true,
      requirement: "no performance regression against the previous driver",
      rowOnlyWhenRun: false,
    },
  ],
  [
    "serving",
    {
      ledger: false,
      requirement:
        "every instance serves small batched requests with right answers (p50, p99, requests/s measured)",
      rowOnlyWhenRun: true,
    },
  ],
  [
    "slurm",
    {
      ledger: true,
      requirement: "a Slurm job gets the instance it asked for and reaches nothing else",
      rowOnlyWhenRun: true,
    },
  ],
];

/** The suites the coverage ledger always names, run or not. */
export const LEDGER_SUITES: readonly string[] = SIGNOFF.filter(([, s]) => s.ledger).map(
  ([name]) => name,
);

/** The suites a sign-off policy may require assessed (its `suites:`): the ledger's, but the
 * matrix, which every policy requires through its fault scenarios. */
export const POLICY_SUITES: readonly string[] = LEDGER_SUITES.filter((s) => !hasRole(s, "matrix"));

/** The suites the documented default policy requires assessed, in the order it names them. */
export const DEFAULT_POLICY_SUITES: readonly BuiltinSuite[] = ["health", "layout"];
