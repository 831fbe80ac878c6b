// `slicecheck apply LAYOUT -c NAME`: bring every selected node's GPUs to a mig-parted layout.
// The layout is loaded and planned offline first (a bad one is refused before any connection),
// then every node is read, planned on its live catalogue and checked against the interlocks;
// only when all of them pass is the original state journalled and the change made. The
// printing here is shared with `restore`.

import { SlicecheckError } from "../../errors.js";
import { withNodeLocks } from "../../harness/locked.js";
import { interruptExitCode } from "../../harness/tasks.js";
import type { NodeSpec } from "../../inventory/types.js";
import {
  applyLayout,
  DEFAULT_JOURNAL_DIR,
  type GpuReport,
  type NodeReport,
  nodeExitCode,
  restoreNodes,
  type StepTimings,
  validateOffline,
} from "../../mig/apply/index.js";
import { applyIntended, intendedGroups } from "../../mig/apply/intended.js";
import type { SessionOptions } from "../../mig/apply/session.js";
import { selectConfig } from "../../mig/layout/index.js";
import { newRunId } from "../../transport/open.js";
import type { Transport } from "../../transport/types.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";
import { loadLayoutInput } from "../input.js";
import { checkOutDir } from "../options.js";

export interface ApplyCliOptions extends NodeOptions {
  config?: string;
  dryRun?: boolean;
  allowReset?: boolean;
  keep?: boolean;
  journalDir?: string;
  /** `--intended`: each node's intended layout (inventory mig_config), not a layout file. */
  intended?: boolean;
  /** `--lease`: the node lease's length in seconds. */
  lease?: number;
  json?: boolean;
}

const STEP_NAMES: [keyof StepTimings, string][] = [
  ["destroyMs", "destroy"],
  ["modeMs", "mode change"],
  ["resetMs", "reset"],
  ["createMs", "create"],
  ["verifyMs", "verify"],
];

export function timingsText(t: StepTimings): string {
  const parts = STEP_NAMES.flatMap(([k, name]) =>
    t[k] === undefined ? [] : [`${name} ${t[k]} ms`],
  );
  return parts.join(", ");
}

/** Errors name their node and GPU for JSON readers; the printed line names them already. */
function withoutPrefix(message: string, node: string, gpu: number): string {
  for (const p of [`${node} GPU ${gpu}: `, `${node}: `]) {
    if (message.startsWith(p)) return message.slice(p.length);
  }
  return message;
}

function gpuHead(node: string, g: GpuReport): string {
  return `${node} GPU ${g.index} (${g.name})`;
}

function printGpu(node: string, g: GpuReport, what: string, io: Out): void {
  const head = gpuHead(node, g);
  switch (g.status) {
    case "not-in-layout":
      io.out(`${head}: no entry of the ${what} applies to it; left as it is`);
      return;
    case "unchanged":
      if (g.planned.length === 0) {
        io.out(`${head}: already as the ${what} wants; no command`);
        return;
      }
      io.out(`${head}: not changed; it would take ${g.planned.length} command(s):`);
      for (const c of g.planned) io.out(`    ${c.join(" ")}`);
      return;
    case "would-change":
      io.out(`${head}: would run ${g.planned.length} command(s):`);
      for (const d of g.drift) io.out(`  - ${d}`);
      for (const c of g.planned) io.out(`    ${c.join(" ")}`);
      break;
    default: {
      const verdict = g.status === "changed" ? "changed" : g.status.toUpperCase();
      io.out(`${head}: ${verdict}`);
      for (const c of g.commands) {
        io.out(`    ${c.argv.join(" ")}  (exit ${c.exitCode ?? "timeout"}, ${c.ms} ms)`);
      }
      io.out(`  now: ${g.verified.length > 0 ? g.verified.join(", ") : "no GPU instances"}`);
      io.out(`  steps: ${timingsText(g.timings)}`);
      for (const r of g.remaining) io.out(`  - still differs: ${r}`);
      if (g.error) io.err(`${head}: ${withoutPrefix(g.error, node, g.index)}`);
    }
  }
  for (const n of g.notes) io.out(`  note: ${n}`);
}

/** Human output of apply and restore. */
export function printChangeReports(
  reports: readonly NodeReport[],
  kind: "apply" | "restore",
  what: string,
  io: Out,
): void {
  for (const r of reports) {
    if (r.error) io.err(`${r.node}: ${r.status}: ${r.error.message} [${r.error.code}]`);
    if (r.status === "no-journal") io.out(`${r.node}: no journal: nothing to restore`);
    if (r.status === "refused") {
      io.out(`${r.node}: REFUSED, nothing was changed:`);
      for (const x of r.refusals) io.out(`  - ${x}`);
    }
    if (r.journal && kind === "apply" && !r.journal.removed) {
      io.out(
        `${r.node}: journal ${r.journal.local} and ${r.node}:${r.journal.remote ?? "?"}${r.journal.reused ? " (kept from an earlier apply: restore goes back to that state)" : ""}`,
      );
    }
    for (const g of r.gpus) printGpu(r.node, g, what, io);
    if (r.status === "held") {
      io.out(`${r.node}: not changed, because another node was refused or could not be read`);
    }
    if (r.journal?.removed)
      io.out(
        kind === "restore"
          ? `${r.node}: restored and verified; journal removed`
          : `${r.node}: verified in its intended layout, its home state; journal removed (restore has nothing to go back to)`,
      );
  }
  io.out(summary(reports, kind));
}

function summary(reports: readonly NodeReport[], kind: "apply" | "restore"): string {
  const gpus = reports.flatMap((r) => r.gpus);
  const count = (s: GpuReport["status"]) => gpus.filter((g) => g.status === s).length;
  const nodes = (s: NodeReport["status"]) => reports.filter((r) => r.status === s).length;
  const ran = gpus.some((g) => g.commands.length > 0);
  if (nodes("dry-run") > 0 && !ran) {
    return `${kind} (dry run): ${count("would-change")} GPU(s) would change, ${count("unchanged")} already as wanted; nothing was changed`;
  }
  const stopped = nodes("refused") + nodes("unreachable") + nodes("bad-input") + nodes("failed");
  if (stopped > 0 && !ran) {
    return `${kind}: ${stopped} node(s) refused or could not be read; nothing was changed on any node`;
  }
  const failed = count("failed") + count("mismatch");
  const tail =
    kind === "apply" && count("changed") > 0
      ? "; `slicecheck restore` puts back the journalled state"
      : "";
  return `${kind}: ${count("changed")} GPU(s) changed, ${count("unchanged")} already as wanted, ${failed} failed, on ${reports.length} node(s)${tail}`;
}

export function worstExit(reports: readonly NodeReport[]): number {
  return Math.max(0, ...reports.map(nodeExitCode));
}

/** What apply brings the nodes to: one layout file's config, or each node's intended layout. */
interface ApplyTarget {
  /** For messages and the lock: `config 'x'` / `the intended layouts`. */
  what: string;
  command: string;
  config: string | null;
  change(
    nodes: readonly NodeSpec[],
    o: SessionOptions & { transports: ReadonlyMap<string, Transport> },
  ): Promise<NodeReport[]>;
}

async function applyTarget(
  layoutPath: string | undefined,
  o: ApplyCliOptions,
  nodes: readonly NodeSpec[],
): Promise<ApplyTarget> {
  if (o.intended && layoutPath !== undefined)
    throw new SlicecheckError("USAGE", "apply: give a layout file or --intended, not both");
  if (o.intended) {
    const groups = intendedGroups(nodes, true);
    return {
      what: "intended layout",
      command: "apply --intended",
      config: null,
      change: (_n, so) => applyIntended(groups, so),
    };
  }
  if (layoutPath === undefined)
    throw new SlicecheckError(
      "USAGE",
      "apply: give a layout file (with -c NAME), or --intended for each node's intended layout from the inventory",
    );
  const config = selectConfig(await loadLayoutInput(layoutPath), o.config);
  validateOffline(config, layoutPath);
  return {
    what: `config '${config.name}'`,
    command: `apply ${layoutPath} -c ${config.name}`,
    config: config.name,
    change: (n, so) =>
      applyLayout(n, config, { ...so, layout: { file: layoutPath, config: config.name } }),
  };
}

export async function applyCommand(
  layoutPath: string | undefined,
  o: ApplyCliOptions,
  io: Out,
): Promise<number> {
  // Everything about the input is checked before the first connection.
  const { nodes } = loadSelected(o);
  const target = await applyTarget(layoutPath, o, nodes);
  if (!o.dryRun) checkOutDir(o.journalDir ?? DEFAULT_JOURNAL_DIR, "--journal-dir");
  const runId = newRunId();
  const journalDir = o.journalDir ?? DEFAULT_JOURNAL_DIR;
  const restoreHint = `slicecheck restore -i ${o.inventory ?? "<inventory>"} --nodes ${nodes.map((n) => n.name).join(",")}${journalDir !== DEFAULT_JOURNAL_DIR ? ` --journal-dir ${journalDir}` : ""}`;
  const stop = changeInterrupts(io, restoreHint);
  if (!o.dryRun) stop.listen();
  // A dry run changes nothing, so it takes no lock (and works beside a running controller).
  const reports = await withNodeLocks(
    nodes,
    runId,
    { command: target.command, lock: !o.dryRun, leaseS: o.lease },
    (transports) =>
      target.change(nodes, {
        runId,
        journalDir,
        allowReset: o.allowReset ?? false,
        dryRun: o.dryRun ?? false,
        keep: o.keep ?? false,
        transports,
      }),
  ).finally(() => {
    if (stop.count() === 0) stop.unlisten();
  });
  if (stop.count() > 0) {
    printChangeReports(reports, "apply", target.what, io);
    const restored = await withNodeLocks(
      nodes,
      runId,
      { command: "restore", lock: true, leaseS: o.lease },
      (transports) =>
        restoreNodes(nodes, { runId, journalDir, allowReset: o.allowReset ?? false, transports }),
    ).finally(() => stop.unlisten());
    printChangeReports(restored, "restore", "the journal", io);
    if (worstExit(restored) !== 0)
      io.err(`slicecheck apply: the restore did not complete; finish with: ${restoreHint}`);
    return interruptExitCode(stop.first());
  }
  printApply(
    reports,
    { runId, layoutPath: layoutPath ?? null, target, json: o.json, dryRun: o.dryRun },
    io,
  );
  return worstExit(reports);
}

/** Ctrl-C in the middle of a change: the step under way is finished (a GPU left between a
 * destroy and a create is worse than either), then the journalled state is put back. A second
 * Ctrl-C stops waiting and prints the command that finishes the job. */
function changeInterrupts(io: Out, restoreHint: string) {
  let interrupted = 0;
  let firstSignal: NodeJS.Signals | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupted++;
    firstSignal ??= sig;
    if (interrupted === 1) {
      io.err(
        `slicecheck apply: ${sig}: finishing the change under way, then restoring the original layout from the journal (interrupt again to stop waiting)`,
      );
      return;
    }
    io.err(
      `slicecheck apply: ${sig} again: stopped waiting; the GPUs may be half-changed. Finish with: ${restoreHint}`,
    );
    process.exit(interruptExitCode(sig));
  };
  return {
    /** How many signals came. */
    count: () => interrupted,
    first: () => firstSignal,
    listen: () => {
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    },
    unlisten: () => {
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
    },
  };
}

/** What the change did, per node: JSON or the table. */
function printApply(
  reports: NodeReport[],
  r: {
    runId: string;
    layoutPath: string | null;
    target: ApplyTarget;
    json?: boolean;
    dryRun?: boolean;
  },
  io: Out,
): void {
  if (r.json) {
    const doc = {
      run: r.runId,
      layout: r.layoutPath,
      config: r.target.config,
      intended: r.target.config === null,
      dryRun: r.dryRun ?? false,
      nodes: reports,
    };
    io.out(JSON.stringify(doc, null, 2));
    return;
  }
  printChangeReports(reports, "apply", r.target.what, io);
}
