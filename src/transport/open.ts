// Opens transports for many nodes and fans commands out to them, with a bound on how many
// connections are being set up at once (sshd's MaxStartups drops unauthenticated connections
// beyond 10 in flight on one host or bastion).
import { randomBytes } from "node:crypto";
import pLimit from "p-limit";
import type { NodeSpec } from "../inventory/types.js";
import { isLocalHost, LocalTransport } from "./local.js";
import { type SshOptions, SshTransport } from "./ssh.js";
import type { Transport } from "./types.js";

export function newRunId(now = new Date()): string {
  const ts = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `sc-${ts}-${randomBytes(3).toString("hex")}`;
}

export function openTransport(node: NodeSpec, opts: SshOptions): Transport {
  // ansible_connection: local, or a node that is this machine.
  const local =
    node.transport === "local" ||
    (isLocalHost(node.host) && node.jump.length === 0 && !node.proxyCommand);
  return local ? new LocalTransport(node, opts.runId) : new SshTransport(node, opts);
}

export interface FanOutResult<T> {
  node: NodeSpec;
  value?: T;
  error?: unknown;
  /** Time to connect (and start the watchdog), when the connection succeeded. */
  connectMs?: number;
}

/** Runs `fn` on every node with at most `concurrency` at once; one node's failure never stops
 * the others. Transports are closed at the end, whatever happened. */
export async function fanOut<T>(
  nodes: readonly NodeSpec[],
  opts: SshOptions & {
    concurrency?: number;
    /** Each node's result as soon as it has one (exec prints a node that could not connect
     * while the others still run). */
    onResult?: (r: FanOutResult<T>) => void;
  },
  fn: (t: Transport) => Promise<T>,
): Promise<FanOutResult<T>[]> {
  const limit = pLimit(opts.concurrency ?? 64);
  const connectLimit = pLimit(16);
  const one = async (node: NodeSpec): Promise<FanOutResult<T>> => {
    const t = openTransport(node, opts);
    let connectMs: number | undefined;
    try {
      const t0 = Date.now();
      await connectLimit(() => t.connect());
      connectMs = Date.now() - t0;
      return { node, value: await fn(t), connectMs };
    } catch (error) {
      return { node, error, connectMs };
    } finally {
      await t.close().catch(() => {});
    }
  };
  return Promise.all(
    nodes.map((node) =>
      limit(async () => {
        const r = await one(node);
        opts.onResult?.(r);
        return r;
      }),
    ),
  );
}
