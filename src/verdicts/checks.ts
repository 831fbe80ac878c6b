// The one record every suite produces (defined here, with the pure verdicts, so that the store
// and the reports can read it without reaching into the harness). The terminal, --json, JUnit, Allure, the records database
// and the compliance page all read this stream, so no check can be counted in one place and be
// missing in another.
import { AssertionError } from "node:assert";
import { SlicecheckError } from "../errors.js";
import {
  EXIT_CODE,
  type PassKind,
  passKindOfCode,
  type Status,
  storedStatus,
  type VerdictStatus,
  worstStatus,
} from "../util/status.js";
import type { VerdictSuite } from "../util/suite-registry.js";

/** A check's status: the one vocabulary (src/util/status.ts). */
export type CheckStatus = Status;

/** One check of the layout, health or regression suites as their verdicts decide it (the
 * suites turn it into the running test's outcome). */
export interface ExtraCheck {
  suite: VerdictSuite;
  node: string;
  gpu: number | null;
  title: string;
  status: TestStatus;
  message: string;
  parameters: Record<string, string>;
  attachment: { name: string; content: string } | null;
  /** A failure's own code (GPU_LOST, ECC_UNCORRECTED, XID); the suite's otherwise. */
  code?: string;
}

/** A test's outcome as a verdict decides it: never skipped (src/util/status.ts). */
export type TestStatus = VerdictStatus;

/** Where a check ran: node, GPU index, and the instance by what survives re-creation (profile
 * and placement), never by GI id alone (GI ids change when a layout is re-applied). */
export interface CheckInstance {
  profile: string;
  placement: string | null;
  /** The GI/CI label of this run (`gpu0/gi1/ci0`), shown, not part of the identity. */
  label: string;
  uuid: string;
}

export interface CheckStep {
  name: string;
  status: CheckStatus;
  startMs: number;
  stopMs: number;
}

export interface CheckEvidence {
  name: string;
  contentType: string;
  /** Inline text, or the path of a file the run wrote (a workload log). */
  content?: string;
  path?: string;
}

export interface CheckRecord {
  /** Unique within the run. */
  id: string;
  /** The suite (file) it belongs to: `stress`, `isolation`, `./site-checks.mjs`. */
  suite: string;
  node: string | null;
  gpu: number | null;
  instance: CheckInstance | null;
  title: string;
  /** The mocha title path below the suite file, joined with " › ". */
  fullTitle: string;
  status: CheckStatus;
  /** How a passed check was shown (src/util/status.ts): a kept promise measured, a soft route's
   * characterised weakness, or a documented constraint. Absent on a check that did not pass;
   * reports read it through passKindOf, never from the code, title or message. */
  kind?: PassKind;
  /** A stable code: OK, SKIPPED, a failure code (ISOLATION_VIOLATION, ASSERTION…) or the
   * harness error's code (CONNECTION_LOST…). Reports group by it, never by message text. */
  code: string;
  message: string;
  figures: Record<string, number | string | boolean | null>;
  evidence: CheckEvidence[];
  steps: CheckStep[];
  parameters: Record<string, string>;
  /** The work this check judges, which may have run concurrently with other checks' work. */
  startMs: number;
  stopMs: number;
}

const FAILED = Symbol.for("slicecheck.CheckFailed");

/** How a test's outcome becomes a check status: an assertion is a failed check, anything else
 * thrown means the harness could not decide (broken), as Allure itself judges it. */
export function classify(err: unknown): { status: CheckStatus; code: string; message: string } {
  if (err === undefined || err === null) return { status: "passed", code: "OK", message: "" };
  const e = err as { name?: string; code?: unknown; message?: unknown; [FAILED]?: boolean };
  const message = typeof e.message === "string" ? e.message : String(err);
  if (e[FAILED] === true || err instanceof AssertionError || e.name === "AssertionError")
    return {
      status: "failed",
      code: typeof e.code === "string" && !/^ERR_ASSERTION$/.test(e.code) ? e.code : "ASSERTION",
      message,
    };
  if (err instanceof SlicecheckError) return { status: "broken", code: err.code, message };
  // suite API notAssessed(): skipped with its reason, not the bare "skipped" of a pending test.
  if ((e as { notAssessed?: boolean }).notAssessed && typeof e.code === "string")
    return { status: "skipped", code: e.code, message };
  if ((e as { brokenCheck?: boolean }).brokenCheck && typeof e.code === "string")
    return { status: "broken", code: e.code, message };
  return { status: "broken", code: "HARNESS_ERROR", message };
}

export interface CheckCounts {
  passed: number;
  failed: number;
  broken: number;
  skipped: number;
}

export function countOf(checks: readonly CheckRecord[]): CheckCounts {
  const c: CheckCounts = { passed: 0, failed: 0, broken: 0, skipped: 0 };
  for (const x of checks) c[x.status]++;
  return c;
}

/** 0 every check passed; 1 one failed; 2 one could not be decided (and none failed). */
export function exitOf(checks: readonly CheckRecord[]): number {
  const worst = worstStatus(checks.map((c) => c.status));
  return worst === "skipped" ? 0 : EXIT_CODE[worst];
}

/** The kind of a passed check (measured where the record names none), null for any other. */
export function passKindOf(c: Pick<CheckRecord, "status" | "kind">): PassKind | null {
  return c.status === "passed" ? (c.kind ?? "measured") : null;
}

/** A passed check that verifies no promise: a characterisation or a documented constraint. */
export const passesWithoutPromise = (c: Pick<CheckRecord, "status" | "kind">): boolean => {
  const k = passKindOf(c);
  return k !== null && k !== "measured";
};

/** A record as read back from checks.jsonl (this version's or an older one's): its status in
 * today's vocabulary ("ok" was passed), and a passed check's kind from its code when the
 * record predates the kind (CHARACTERISED, DOCUMENTED_CONSTRAINT). */
export function readCheck(raw: CheckRecord): CheckRecord {
  const status = storedStatus(raw.status);
  const { kind: _k, ...rest } = raw;
  if (status !== "passed") return { ...rest, status };
  return { ...rest, status, kind: raw.kind ?? passKindOfCode(raw.code) };
}

/** What identifies a check across runs and drivers (diff, history). */
export function checkKey(
  c: Pick<CheckRecord, "suite" | "node" | "gpu" | "instance" | "title">,
): string {
  const inst = c.instance ? `${c.instance.profile}@${c.instance.placement ?? "-"}` : "-";
  return [c.suite, c.node ?? "-", c.gpu ?? "-", inst, c.title].join(" | ");
}

export type CheckListener = (c: CheckRecord) => void;

/** The one sink: records arrive here as tests finish; listeners write them out at once
 * (terminal, checks.jsonl, the records database), so an interrupted run keeps them. */
export class CheckSink {
  readonly checks: CheckRecord[] = [];
  private readonly listeners: CheckListener[] = [];
  private n = 0;

  nextId(): string {
    this.n++;
    return `c${String(this.n).padStart(4, "0")}`;
  }

  on(l: CheckListener): void {
    this.listeners.push(l);
  }

  add(c: CheckRecord): void {
    this.checks.push(c);
    for (const l of this.listeners) {
      try {
        l(c);
      } catch {
        // A sink that cannot write (disk full) must not lose the check for the others.
      }
    }
  }

  /** A check the harness itself decides (a node that could not be reached, a refused apply). */
  harness(
    fields: Partial<CheckRecord> &
      Pick<CheckRecord, "suite" | "title" | "status" | "code" | "message">,
  ): CheckRecord {
    const now = Date.now();
    const c: CheckRecord = {
      id: this.nextId(),
      node: null,
      gpu: null,
      instance: null,
      fullTitle: fields.title,
      figures: {},
      evidence: [],
      steps: [],
      parameters: {},
      startMs: now,
      stopMs: now,
      ...fields,
    };
    if (c.status === "passed") c.kind ??= "measured";
    this.add(c);
    return c;
  }
}
