// The one status vocabulary (DESIGN "Checks"), in the shared base so that every layer, from a
// workload's outcome to the sign-off page, says the same four words and no layer invents a
// fifth for the same thing ("ok" for passed was one). Every other status type in src/ is this
// union, a subset of it, or a presentation derived from it by one function
// (test/structure/status-vocabulary.test.ts keeps it so). Lifecycle words of a run (running,
// interrupted, abandoned) and the history's event types (invoke, ok, fail, info: Jepsen's
// words for an operation, not a verdict) are other things and keep their own names.

/**
 * - passed:  the node kept the promise the check judges (its `PassKind` says how it was shown);
 * - failed:  the node broke a promise; the only status that blames the node;
 * - broken:  the harness was disturbed and could not decide (a stall, a lost connection, a
 *            workload cut short): never a verdict on the node, neither a pass nor a failure;
 * - skipped: not assessed (what it judges cannot be observed here, or the test did not run).
 */
export const STATUSES = ["passed", "failed", "broken", "skipped"] as const;
export type Status = (typeof STATUSES)[number];

/** What a judgement says once it ran: it decided (passed, failed) or could not (broken). A
 * judgement is never skipped: not assessing is decided before any judgement runs. */
export type VerdictStatus = Exclude<Status, "skipped">;

/**
 * The kind of a passed check, carried on the check record (never read back from its title or
 * message):
 * - measured:              a promise the route makes, kept and shown by a measurement;
 * - characterised:         a soft route's expected weakness, measured with its figure (a noisy
 *                          neighbour under time-slicing): passed, because the route never
 *                          promised otherwise, but it verifies no isolation;
 * - documented-constraint: a limit the platform documents (NCCL across two MIG instances of one
 *                          GPU is refused or slow): passed, never a failure of the node, and
 *                          likewise no evidence of isolation.
 */
export const PASS_KINDS = ["measured", "characterised", "documented-constraint"] as const;
export type PassKind = (typeof PASS_KINDS)[number];

/** The stable code a passed check of each kind records (what JUnit, the database and the
 * terminal show); a measured pass may carry a suite's own code instead of OK. */
export const PASS_CODE: Readonly<Record<PassKind, string>> = {
  measured: "OK",
  characterised: "CHARACTERISED",
  "documented-constraint": "DOCUMENTED_CONSTRAINT",
};

/** The kind a passed check's code stands for: how a record written before the kind existed
 * (checks.jsonl, a database row), or a suite that sets only the code, is read. */
export function passKindOfCode(code: string): PassKind {
  if (code === PASS_CODE.characterised) return "characterised";
  if (code === PASS_CODE["documented-constraint"]) return "documented-constraint";
  return "measured";
}

/** A stored status as this vocabulary says it: "ok", the word earlier versions wrote for a
 * passed workload or verdict, is read as passed; anything unknown could not be decided. */
export function storedStatus(raw: unknown): Status {
  if (raw === "ok") return "passed";
  return (STATUSES as readonly unknown[]).includes(raw) ? (raw as Status) : "broken";
}

/** Worst first, as the exit code ranks them: a failure outranks an undecided check, which
 * outranks a pass; skipped counts for nothing. */
const RANK: Readonly<Record<Status, number>> = { failed: 3, broken: 2, passed: 1, skipped: 0 };

/** The worst status of a list, or skipped for an empty one (nothing was assessed). */
export function worstStatus(list: Iterable<Status>): Status {
  let worst: Status = "skipped";
  for (const s of list) if (RANK[s] > RANK[worst]) worst = s;
  return worst;
}

/** The process exit code of each decided status (0 passed, 1 failed, 2 could not decide). */
export const EXIT_CODE: Readonly<Record<VerdictStatus, number>> = {
  passed: 0,
  failed: 1,
  broken: 2,
};

/** The status an exit code stands for; an unknown code could not be decided. */
export function statusOfExit(code: number): VerdictStatus {
  const hit = (Object.keys(EXIT_CODE) as VerdictStatus[]).find((s) => EXIT_CODE[s] === code);
  return hit ?? "broken";
}
