// One node's isolation run: enough connections for victims and aggressor side by side, the
// scenarios, and a sweep of the run's processes over a fresh connection when one was lost.
import type { NodeSpec } from "../inventory/types.js";
import { openTransport } from "../transport/open.js";
import { MAX_CHANNELS } from "../transport/ssh.js";
import type { Transport } from "../transport/types.js";
import { discoverInstances } from "../workloads/instances.js";
import { errText, type IsolationNodeResult, type IsolationOptions } from "./plan.js";
import { NodeScenarios } from "./scenario.js";

/** Runs every scenario on `node`; never throws for the node's own failures. */
export async function runIsolationNode(
  node: NodeSpec,
  o: IsolationOptions,
): Promise<IsolationNodeResult> {
  const first = openTransport(node, { runId: o.runId });
  const transports: Transport[] = [first];
  let result: IsolationNodeResult;
  try {
    await first.connect();
    // Two connections at least: victims' stress on one, the aggressor and checks on the other.
    const inv = await discoverInstances(first);
    const need = Math.max(2, Math.ceil((inv.instances.length * 2) / MAX_CHANNELS));
    for (let i = 1; i < need; i++) {
      const t = openTransport(node, { runId: o.runId });
      await t.connect();
      transports.push(t);
    }
    result = await new NodeScenarios(transports, o).run();
  } catch (e) {
    result = { node: node.name, results: [], error: errText(e) };
  } finally {
    await Promise.all(transports.map((t) => t.close().catch(() => {})));
  }
  if (
    result.error !== null ||
    result.results.some((r) => r.verdicts.some((v) => v.status === "broken"))
  )
    await sweep(node, o.runId);
  return result;
}

/** After a lost connection: kill whatever the run still has on the node, over a new one. */
async function sweep(node: NodeSpec, runId: string): Promise<void> {
  const t = openTransport(node, { runId });
  try {
    await t.connect();
    await t.killRun();
  } catch {
    // Unreachable: the node's watchdog kills the run's processes once heartbeats stop.
  } finally {
    await t.close().catch(() => {});
  }
}
