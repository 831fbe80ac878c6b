// `slicecheck cleanup --run ID`: finds and kills what a run left on its nodes (a controller that
// was SIGKILLed before its watchdogs fired, or a watchdog that could not run).

import { isSlicecheckError, SlicecheckError } from "../../errors.js";
import { runTagFor } from "../../transport/managed.js";
import { fanOut, newRunId } from "../../transport/open.js";
import type { RunProcess } from "../../transport/types.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";

export async function cleanupCommand(
  o: NodeOptions & { run: string; dryRun?: boolean; json?: boolean },
  io: Out,
): Promise<number> {
  if (!/^[A-Za-z0-9._-]+$/.test(o.run))
    throw new SlicecheckError(
      "USAGE",
      `--run expects a run id like sc-20261129T101500Z-1a2b3c, got '${o.run}'`,
    );
  const { nodes } = loadSelected(o);
  const results = await fanOut(nodes, { runId: newRunId() }, async (t) => {
    const tag = runTagFor(o.run, t.node.name);
    const found: RunProcess[] = await t.listRun(tag);
    const killed = found.length && !o.dryRun ? await t.killRun(tag) : 0;
    return { found, killed };
  });
  let failed = false;
  const json = results.map((r) => {
    if (r.error !== undefined) {
      failed = true;
      return {
        name: r.node.name,
        error: isSlicecheckError(r.error)
          ? `${r.error.message} [${r.error.code}]`
          : r.error instanceof Error
            ? r.error.message
            : String(r.error),
        found: [],
        killed: 0,
      };
    }
    return { name: r.node.name, error: null, ...r.value! };
  });
  if (o.json) io.out(JSON.stringify({ run: o.run, nodes: json }, null, 2));
  else {
    for (const n of json) {
      if (n.error) io.err(`${n.name}: ${n.error}`);
      else if (n.found.length === 0) io.out(`${n.name}: nothing left by ${o.run}`);
      else {
        io.out(
          `${n.name}: ${n.found.length} process(es) of ${o.run}${o.dryRun ? " (dry run, not killed)" : `, killed ${n.killed}`}`,
        );
        for (const p of n.found) io.out(`  ${p.pid} ${p.command}`);
      }
    }
  }
  return failed ? 2 : 0;
}
