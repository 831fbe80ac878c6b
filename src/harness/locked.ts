// apply and restore hold the node lock too: each command opens one session per node, locks it,
// and hands the sessions to the state machine, which then opens no connection of its own.
// All or nothing, as the interlocks are: a node that cannot be locked (another controller holds
// it) stops the command on every node before anything changes.
import type { NodeSpec } from "../inventory/types.js";
import type { NodeReport } from "../mig/apply/index.js";
import type { Transport } from "../transport/types.js";
import { openSessions } from "./session.js";

export async function withNodeLocks(
  nodes: readonly NodeSpec[],
  runId: string,
  o: { command: string; lock: boolean; leaseS?: number },
  fn: (transports: ReadonlyMap<string, Transport>) => Promise<NodeReport[]>,
): Promise<NodeReport[]> {
  const sessions = await openSessions(nodes, runId, {
    lock: o.lock,
    command: o.command,
    leaseS: o.leaseS,
  });
  try {
    const bad = sessions.filter((s) => s.error);
    const good = new Map(sessions.filter((s) => !s.error).map((s) => [s.node.name, s]));
    // A dry run changes nothing: every node that answers gets its plan, the others their error
    // (the state machine reaches them itself and reports them unreachable).
    if (bad.length === 0 || !o.lock) return await fn(good);
    return sessions.map((s): NodeReport => {
      const e = s.error;
      const base = { node: s.node.name, journal: null, gpus: [] };
      if (!e) return { ...base, status: "held", error: null, refusals: [] };
      const locked = e.code === "NODE_LOCKED";
      return {
        ...base,
        status: locked ? "refused" : "unreachable",
        error: { code: e.code, message: e.message },
        refusals: locked ? [e.message] : [],
      };
    });
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}
