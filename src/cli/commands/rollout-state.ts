// A rolling maintenance window's state file: which nodes are done, with what verdict, so that
// an interrupted rollout (Ctrl-C, a lost controller, a node that failed and was fixed) resumes
// where it stopped. Written atomically after every change; a node is `running` only while its
// batch runs, so a killed controller leaves it `running` and the resume runs it again.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { SlicecheckError } from "../../errors.js";
import { STATUSES, type VerdictStatus } from "../../util/status.js";

/** A node not yet verified, being verified, or its verdict (the one status vocabulary). */
export type RolloutNodeState = "pending" | "running" | VerdictStatus;

const nodeSchema = z.object({
  name: z.string(),
  state: z.union([z.enum(["pending", "running"]), z.enum(STATUSES)]) as z.ZodType<RolloutNodeState>,
  runId: z.string().nullable(),
  out: z.string().nullable(),
  startedAt: z.string().nullable(),
  durationS: z.number().nullable(),
  driverBefore: z.string().nullable(),
  driverAfter: z.string().nullable(),
  /** The first check that did not pass, in words (`failed isolation … [CODE]`). */
  reason: z.string().nullable(),
});
export type RolloutNode = z.infer<typeof nodeSchema>;

const stateSchema = z.object({
  version: z.literal(1),
  id: z.string(),
  /** What must match for a resume: the same nodes, suites and options. */
  plan: z.object({
    inventory: z.string(),
    suites: z.string(),
    maxUnavailable: z.number().int().positive(),
    keepGoing: z.boolean(),
    via: z.string().nullable(),
  }),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  status: z.enum(["running", "stopped", "done"]),
  nodes: z.array(nodeSchema),
});
export type RolloutState = z.infer<typeof stateSchema>;
export type RolloutPlan = RolloutState["plan"];

export function newState(id: string, plan: RolloutPlan, nodes: readonly string[]): RolloutState {
  return {
    version: 1,
    id,
    plan,
    startedAt: new Date().toISOString(),
    finishedAt: null,
    status: "running",
    nodes: nodes.map((name) => ({
      name,
      state: "pending",
      runId: null,
      out: null,
      startedAt: null,
      durationS: null,
      driverBefore: null,
      driverAfter: null,
      reason: null,
    })),
  };
}

export function readState(file: string): RolloutState | null {
  if (!existsSync(file)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new SlicecheckError(
      "USAGE",
      `${file}: not a rollout state file (${(e as Error).message}); give another --state or remove it`,
    );
  }
  const r = stateSchema.safeParse(raw);
  if (!r.success)
    throw new SlicecheckError(
      "USAGE",
      `${file}: not a rollout state file of this version (${r.error.issues[0]?.path.join(".")}: ${r.error.issues[0]?.message}); give another --state or remove it`,
    );
  return r.data;
}

/** Atomic: a controller killed while writing leaves the previous state, never half a file. */
export function writeState(file: string, s: RolloutState): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${process.pid}.rollout.tmp`);
  writeFileSync(tmp, `${JSON.stringify(s, null, 2)}\n`);
  renameSync(tmp, file);
}

/**
 * The state to go on with: an unfinished rollout of the same plan resumes (its passed nodes are
 * not run again; failed, broken and interrupted ones are); one of another plan is refused
 * (its nodes' verdicts would be mixed with this one's); a finished one is replaced.
 */
export function resumeOrStart(
  file: string,
  fresh: RolloutState,
): { state: RolloutState; resumed: boolean } {
  const old = readState(file);
  if (!old || old.status === "done") return { state: fresh, resumed: false };
  const same =
    JSON.stringify(old.plan) === JSON.stringify(fresh.plan) &&
    old.nodes.map((n) => n.name).join(",") === fresh.nodes.map((n) => n.name).join(",");
  if (!same)
    throw new SlicecheckError(
      "USAGE",
      `${file} holds unfinished rollout ${old.id} of other nodes or options (nodes ${old.nodes.map((n) => n.name).join(",")}, suites ${old.plan.suites}); resume it with the same command, or give another --state`,
    );
  for (const n of old.nodes) if (n.state !== "passed") n.state = "pending";
  return { state: { ...old, status: "running", finishedAt: null }, resumed: true };
}

/** The next batch: at most `max` nodes still to run, in the rollout's order. */
export function nextBatch(s: RolloutState, max: number): RolloutNode[] {
  return s.nodes.filter((n) => n.state === "pending").slice(0, max);
}
