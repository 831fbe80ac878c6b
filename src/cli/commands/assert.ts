// `slicecheck assert [LAYOUT -c NAME]`: does every selected GPU match the layout (without one:
// each node's intended layout from the inventory)? Reads only; prints what differs per GPU.
// Exit 0 when all match, 1 on drift, 2 when a node could not be read, 3 for a bad layout or a
// node with no intended layout (refused before any connection).

import {
  assertLayout,
  DEFAULT_JOURNAL_DIR,
  type NodeReport,
  validateOffline,
} from "../../mig/apply/index.js";
import { intendedGroups, intendedName } from "../../mig/apply/intended.js";
import type { LayoutConfig } from "../../mig/layout/index.js";
import { selectConfig } from "../../mig/layout/index.js";
import { newRunId } from "../../transport/open.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";
import { loadLayoutInput } from "../input.js";
import { worstExit } from "./apply.js";

export interface AssertCliOptions extends NodeOptions {
  config?: string;
  json?: boolean;
}

/** One layout asserted on some nodes: the given one on all, or one intended layout's nodes. */
interface Target {
  file: string;
  config: LayoutConfig;
  nodes: ReturnType<typeof loadSelected>["nodes"];
  intended: boolean;
}

async function targetsOf(layoutPath: string | undefined, o: AssertCliOptions): Promise<Target[]> {
  if (layoutPath === undefined) {
    const groups = intendedGroups(loadSelected(o).nodes, true);
    return groups.map((g) => ({ ...g, intended: true }));
  }
  const config = selectConfig(await loadLayoutInput(layoutPath), o.config);
  validateOffline(config, layoutPath);
  return [{ file: layoutPath, config, nodes: loadSelected(o).nodes, intended: false }];
}

export async function assertCommand(
  layoutPath: string | undefined,
  o: AssertCliOptions,
  io: Out,
): Promise<number> {
  const targets = await targetsOf(layoutPath, o);
  const runId = newRunId();
  const done = await Promise.all(
    targets.map(async (t) => ({
      t,
      reports: await assertLayout(t.nodes, t.config, { runId, journalDir: DEFAULT_JOURNAL_DIR }),
    })),
  );
  const all = done.flatMap((d) => d.reports);
  if (o.json) {
    const layouts = done.map(({ t, reports }) => ({
      layout: t.file,
      config: t.config.name,
      intended: t.intended,
      nodes: reports,
    }));
    // One layout keeps the shape scripts already read; intended layouts are listed.
    io.out(JSON.stringify(layoutPath === undefined ? { layouts } : layouts[0], null, 2));
    return worstExit(all);
  }
  let gpus = 0;
  let drifted = 0;
  for (const { t, reports } of done) {
    const c = printReports(reports, t, io);
    gpus += c.gpus;
    drifted += c.drifted;
  }
  const unread = all.filter((r) => r.error).length;
  const what =
    layoutPath === undefined
      ? "are not in their intended layout"
      : `drift from config '${targets[0]?.config.name}'`;
  io.out(
    `assert: ${drifted} of ${gpus} GPU(s) ${what}${unread ? `; ${unread} node(s) could not be read` : ""}`,
  );
  return worstExit(all);
}

function printReports(reports: readonly NodeReport[], t: Target, io: Out) {
  const name = t.intended
    ? `intended ${intendedName({ file: t.file, config: t.config.name })}`
    : `config '${t.config.name}'`;
  let gpus = 0;
  let drifted = 0;
  for (const r of reports) {
    if (r.error) io.err(`${r.node}: ${r.status}: ${r.error.message} [${r.error.code}]`);
    for (const g of r.gpus) {
      const head = `${r.node} GPU ${g.index} (${g.name})`;
      if (g.status === "not-in-layout") {
        io.out(`${head}: no entry of ${name} applies to it`);
        continue;
      }
      gpus++;
      if (g.status === "match") {
        io.out(`${head}: matches ${name}`);
        continue;
      }
      drifted++;
      io.out(t.intended ? `${head}: NOT INTENDED, differs from ${name}` : `${head}: DRIFT`);
      for (const d of g.drift) io.out(`  - ${d}`);
    }
  }
  if (t.intended && drifted > 0)
    io.out(
      `  fix: slicecheck apply --intended ${reports.length ? `--nodes ${reports.map((r) => r.node).join(",")}` : ""}`,
    );
  return { gpus, drifted };
}
