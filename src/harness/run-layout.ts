// The run's layout task: apply --layout on every node that answered, with its teardown (the
// journalled state put back at the end unless --keep) registered first, so a failure half-way
// is undone too. A node the apply refused or could not change is that node's broken check.
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { applyLayout, type NodeReport, restoreNodes } from "../mig/apply/index.js";
import { applyIntended, intendedGroups, intendedName } from "../mig/apply/intended.js";
import type { SessionOptions } from "../mig/apply/session.js";
import type { LayoutConfig } from "../mig/layout/index.js";
import type { Recorder } from "../store/recorder.js";
import type { Transport } from "../transport/types.js";
import { APPLY_CHECK_SUITE } from "../util/suite-registry.js";
import type { PreCheck } from "./mocha-run.js";
import type { RunProgress } from "./progress.js";
import { cdiAfterApply, cdiAfterRestore } from "./run-cdi.js";
import type { NodeSession } from "./session.js";
import type { TaskList, Teardown } from "./tasks.js";

export interface LayoutTaskOptions {
  runId: string;
  journalDir: string;
  allowReset: boolean;
  keep: boolean;
  /** `--regenerate-cdi`: `nvidia-ctk cdi generate` after the apply and the restore. */
  regenerateCdi: boolean;
  /** `-i INV --nodes …`, for the commands printed to finish by hand. */
  where: string;
  recorder: Recorder | null;
  early(c: PreCheck): void;
  /** The run's progress (phases per node, for the terminal). */
  progress: RunProgress;
  err(line: string): void;
}

const BAD = new Set(["refused", "failed", "mismatch", "held", "unreachable", "bad-input"]);

type Session = { runId: string; journalDir: string; allowReset: boolean; keep: boolean };

/** The teardown that puts every node the apply reached back (also one it failed on half-way). */
function restoreTeardown(
  live: readonly NodeSession[],
  session: Session,
  o: LayoutTaskOptions,
): Teardown {
  const transports = new Map(live.map((s) => [s.node.name, s as NodeSession]));
  return {
    name: "restore the original MIG layout",
    manual: `slicecheck restore ${o.where}${o.journalDir !== "reports/journal" ? ` --journal-dir ${o.journalDir}` : ""}`,
    run: async () => {
      const targets = live.map((s) => s.node);
      if (targets.length === 0) return;
      o.progress.phase(
        targets.map((t) => t.name),
        "restore",
      );
      o.err("restoring the original MIG layout (use --keep to leave the run's layout in place)");
      const restored = await putBack(targets, { ...session, transports }, o);
      const back = restored.filter((r) => !r.error).map((r) => r.node);
      await cdiAfterRestore(
        live.filter((s) => back.includes(s.node.name)),
        { regenerate: o.regenerateCdi, err: o.err },
      );
      const lost: string[] = [];
      for (const r of restored) {
        if (r.error?.code === "LEASE_LOST") {
          // Its message says what to do; "run restore once fixed" would undo another's layout.
          o.err(`${r.node}: restore refused: ${r.error.message} [LEASE_LOST]`);
          lost.push(r.node);
        } else if (r.error)
          o.err(
            `${r.node}: restore ${r.status}: ${r.error.message} [${r.error.code}]; run \`slicecheck restore ${o.where}\` once the cause is fixed`,
          );
      }
      // The run does not end as if its nodes were put back: a broken check of the run.
      if (lost.length > 0)
        throw new SlicecheckError(
          "LEASE_LOST",
          `the run lost its lease on ${lost.join(", ")} and did not restore ${lost.length === 1 ? "it" : "them"}; their layout may be another controller's now`,
          { nodes: lost },
        );
    },
  };
}

/**
 * Nodes with an intended layout (inventory mig_config) end in it, not in the layout they were
 * found in (which may be the empty one a driver upgrade left); the others get their journal's.
 */
async function putBack(
  targets: readonly NodeSpec[],
  so: SessionOptions & { transports: ReadonlyMap<string, Transport> },
  o: LayoutTaskOptions,
): Promise<NodeReport[]> {
  const home = targets.filter((n) => n.intended);
  const found = targets.filter((n) => !n.intended);
  const [intended, restored] = await Promise.all([
    home.length ? applyIntended(intendedGroups(home, false), so) : [],
    found.length ? restoreNodes(found, so) : [],
  ]);
  for (const r of intended) {
    const i = home.find((n) => n.name === r.node)?.intended;
    if (i && !r.error)
      o.err(
        `${r.node}: left in its intended layout, ${intendedName(i)}, not the one it was found in`,
      );
  }
  return [...intended, ...restored];
}

/** A node the apply refused or could not change: its broken (or failed) check, and no suites. */
function judgeApplied(
  r: NodeReport,
  config: string,
  sessions: readonly NodeSession[],
  o: LayoutTaskOptions,
) {
  for (const g of r.gpus) o.recorder?.steps(r.node, g.index, g.timings);
  if (!BAD.has(r.status)) return;
  o.early({
    suite: APPLY_CHECK_SUITE,
    node: r.node,
    title: `config ${config} applied`,
    status: r.status === "mismatch" ? "failed" : "broken",
    code:
      r.status === "refused"
        ? "INTERLOCK"
        : r.status === "mismatch"
          ? "LAYOUT_DRIFT"
          : (r.error?.code ?? "APPLY_FAILED"),
    message:
      r.status === "refused"
        ? `refused, nothing was changed: ${r.refusals.join("; ")}`
        : r.status === "held"
          ? "not changed, because another node was refused or could not be read"
          : (r.error?.message ?? `apply ${r.status}`),
  });
  // Its suites must not run on a layout that is not the one asked for.
  const s = sessions.find((x) => x.node.name === r.node);
  if (s && !s.error)
    s.error = new SlicecheckError(
      r.status === "refused" ? "INTERLOCK" : "NODE_COMMAND",
      `the layout was not applied (${r.status})`,
    );
}

export async function layoutTask(
  layout: { file: string; config: LayoutConfig },
  tasks: TaskList,
  live: readonly NodeSession[],
  sessions: readonly NodeSession[],
  o: LayoutTaskOptions,
): Promise<void> {
  const transports = new Map(live.map((s) => [s.node.name, s as NodeSession]));
  const session = {
    runId: o.runId,
    journalDir: o.journalDir,
    allowReset: o.allowReset,
    keep: o.keep,
  };
  const alive = () => live.filter((s) => !s.error);
  if (!o.keep) tasks.teardown(restoreTeardown(live, session, o));
  const applied = await tasks.task("apply the layout", async () => {
    o.progress.phase(
      alive().map((x) => x.node.name),
      "layout",
      `config ${layout.config.name}`,
    );
    return applyLayout(
      alive().map((s) => s.node),
      layout.config,
      {
        ...session,
        dryRun: false,
        layout: { file: layout.file, config: layout.config.name },
        transports,
      },
    );
  });
  for (const r of applied ?? []) judgeApplied(r, layout.config.name, sessions, o);
  if (applied?.every((r) => r.status !== "refused" && r.status !== "held")) {
    await Promise.all(alive().map((s) => s.discover(true).catch(() => {})));
    await cdiAfterApply(alive(), layout.config.name, {
      regenerate: o.regenerateCdi,
      err: o.err,
      early: o.early,
    });
  }
}
