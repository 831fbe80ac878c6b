// `slicecheck assert LAYOUT -c NAME`: does every selected GPU match the layout? Reads only; prints
// what differs per GPU. Exit 0 when all match, 1 on drift, 2 when a node could not be read, 3
// for a bad layout (refused before any connection).

import { assertLayout, DEFAULT_JOURNAL_DIR, validateOffline } from "../../mig/apply/index.js";
import { selectConfig } from "../../mig/layout/index.js";
import { newRunId } from "../../transport/open.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";
import { loadLayoutInput } from "../input.js";
import { worstExit } from "./apply.js";

export interface AssertCliOptions extends NodeOptions {
  config?: string;
  json?: boolean;
}

export async function assertCommand(
  layoutPath: string,
  o: AssertCliOptions,
  io: Out,
): Promise<number> {
  const config = selectConfig(await loadLayoutInput(layoutPath), o.config);
  validateOffline(config, layoutPath);
  const { nodes } = loadSelected(o);
  const runId = newRunId();
  const reports = await assertLayout(nodes, config, { runId, journalDir: DEFAULT_JOURNAL_DIR });
  if (o.json) {
    io.out(JSON.stringify({ layout: layoutPath, config: config.name, nodes: reports }, null, 2));
    return worstExit(reports);
  }
  let gpus = 0;
  let drifted = 0;
  for (const r of reports) {
    if (r.error) io.err(`${r.node}: ${r.status}: ${r.error.message} [${r.error.code}]`);
    for (const g of r.gpus) {
      const head = `${r.node} GPU ${g.index} (${g.name})`;
      if (g.status === "not-in-layout") {
        io.out(`${head}: no entry of config '${config.name}' applies to it`);
        continue;
      }
      gpus++;
      if (g.status === "match") {
        io.out(`${head}: matches config '${config.name}'`);
        continue;
      }
      drifted++;
      io.out(`${head}: DRIFT`);
      for (const d of g.drift) io.out(`  - ${d}`);
    }
  }
  const unread = reports.filter((r) => r.error).length;
  io.out(
    `assert: ${drifted} of ${gpus} GPU(s) drift from config '${config.name}'${unread ? `; ${unread} node(s) could not be read` : ""}`,
  );
  return worstExit(reports);
}
