// A suite's work per node, started for every node at once and run at most `--concurrency` nodes
// at a time. Mocha runs a suite's describes one after another; if each node's work began in its
// own `before`, nodes would run one after another (two isolation nodes took twice one node's
// time). So the work is queued for all nodes when the suite starts, and each node's tests await
// that node's own promise: reporting stays per node, and one node's failure stays its own.
import type { IsolationPlan } from "./api-types.js";

/** Runs `fn` when a slot is free (p-limit's shape). */
export type Slot = <T>(fn: () => Promise<T>) => Promise<T>;

export interface NodeWork<T> {
  /** Queues every node's work (idempotent). */
  start(): void;
  /** The node's result; queues every node's work first if nothing started it yet. */
  result(node: { name: string }): Promise<T>;
}

/** `fn` for each of `nodes`, in that order, through `slot`. A rejected node's promise is
 * handled here too, so a node nobody asks about never becomes an unhandled rejection. */
export function nodeWork<N extends { name: string }, T>(
  slot: Slot,
  nodes: readonly N[],
  fn: (node: N) => Promise<T>,
): NodeWork<T> {
  let started: Map<string, Promise<T>> | null = null;
  const start = () => {
    if (started) return started;
    started = new Map();
    for (const node of nodes) {
      const p = slot(() => fn(node));
      p.catch(() => {});
      started.set(node.name, p);
    }
    return started;
  };
  return {
    start: () => void start(),
    result: (node) => {
      const p = start().get(node.name);
      return p ?? Promise.reject(new Error(`${node.name} is not one of this work's nodes`));
    },
  };
}

/** A node's isolation plan as the run's services give it: `start()` runs its scenarios at once
 * and settles when they all have; asking for a result or a route starts nothing. */
export type NodeIsolation = Omit<IsolationPlan, "start"> & { start(): Promise<void> };

/** The node's isolation plan, its scenarios run through `go` (a slot of the run's limit) however
 * they are first asked for: `start()`, a scenario's result or a GPU's route. */
export function gatedPlan(
  plan: NodeIsolation,
  go: (run: () => Promise<void>) => Promise<void>,
): IsolationPlan {
  let done: Promise<void> | null = null;
  const start = () => {
    if (!done) {
      done = go(() => plan.start());
      done.catch(() => {});
    }
  };
  return {
    ...plan,
    start,
    route: (gpu) => {
      start();
      return plan.route(gpu);
    },
    scenarios: plan.scenarios.map((s) => ({
      ...s,
      result: () => {
        start();
        return s.result();
      },
    })),
  };
}
