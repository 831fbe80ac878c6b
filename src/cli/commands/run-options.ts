// The run's own options checked together, before any node is touched: combinations that mean
// nothing (`-c` without `--layout`, `--report-to-slurm` without `--drain`) are refused with
// what to give instead.
import { parseTenants } from "../../chaos/tenants.js";
import { SlicecheckError } from "../../errors.js";
import type { SuiteFile } from "../../harness/suites.js";
import type { NodeSpec } from "../../inventory/types.js";
import type { NodeOptions } from "../context.js";

// The run command's options as commander parses them (run.ts and run-via.ts read them too).
export interface RunCliOptions extends NodeOptions {
  suites: string;
  layout?: string;
  config?: string;
  keep?: boolean;
  allowReset?: boolean;
  /** `--regenerate-cdi`: regenerate the CDI spec after the layout's apply and restore. */
  regenerateCdi?: boolean;
  journalDir?: string;
  /** `--lease`: the node lease's length in seconds. */
  lease?: number;
  duration: number;
  out?: string;
  json?: boolean;
  concurrency?: number;
  db?: string;
  dbTimeout?: number;
  label?: string;
  faults?: string;
  /** Allowed throughput loss of a victim, as a fraction (default 0.05). */
  tolerance?: number;
  aggressors?: number;
  /** nccl: the all_reduce floor across whole GPUs, GB/s (`--busbw-floor`). */
  busbwFloor?: number;
  /** Soft routes: tenant counts (`2-7`, `2,4`, `none`). */
  tenants?: string;
  allure?: boolean;
  grep?: string;
  list?: boolean;
  bail?: boolean;
  /** No live progress; the end of the run is printed as usual. */
  quiet?: boolean;
  drain?: boolean;
  drainTimeout?: number;
  reportToSlurm?: boolean;
  /** isolation: `--latency-faults LIST|none`. */
  latencyFaults?: string;
  /** Set by `rollout`, not a flag: a drained node is resumed only when all its checks passed. */
  resumeOnlyOnPass?: boolean;
  /** Set by `rollout`, not a flag: its id, in the drain reasons of its runs. */
  drainOwner?: string;
  via?: string;
  /** Given by `run --via slurm` to its jobs: one run id across the nodes. */
  runId?: string;
  partition?: string;
  reservation?: string;
  local?: boolean;
  /** --via slurm: seconds a task may stay pending before it is cancelled. */
  startTimeout?: number;
  /** --via slurm: each task's Slurm time limit, in seconds (sbatch --time). */
  timeLimit?: number;
  /** --via slurm: seconds a task may stay COMPLETING before it is gathered anyway. */
  completingGrace?: number;
}

export function checkRunOptions(o: RunCliOptions): void {
  // mocha compiles --grep as a regular expression once the nodes are reached: check it first.
  if (o.grep !== undefined) {
    try {
      new RegExp(o.grep);
    } catch (e) {
      throw new SlicecheckError(
        "USAGE",
        `--grep ${JSON.stringify(o.grep)}: not a regular expression (${(e as Error).message.replace(/^Invalid regular expression: /, "")}); escape ( ) [ ] * + ? with a backslash to match them as text`,
      );
    }
  }
  if (!o.layout && o.config)
    throw new SlicecheckError(
      "USAGE",
      "-c/--config names a config of a --layout file; give --layout too",
    );
  if (!o.layout && o.regenerateCdi)
    throw new SlicecheckError(
      "USAGE",
      "--regenerate-cdi regenerates the CDI spec after the layout a run applies; give --layout FILE -c NAME too",
    );
  if (o.reportToSlurm && !o.drain)
    throw new SlicecheckError(
      "USAGE",
      "--report-to-slurm leaves the nodes this run drained drained; give --drain too",
    );
}

/** A suite that checks the layout (the `layout` suite) needs --layout, or an intended layout
 * (inventory mig_config) on every selected node. */
export function checkLayoutSuites(
  o: RunCliOptions,
  suites: readonly SuiteFile[],
  nodes: readonly NodeSpec[],
): void {
  const layoutSuites = suites.filter((s) => s.needs?.needsLayout).map((s) => s.name);
  if (o.layout || layoutSuites.length === 0 || nodes.every((n) => n.intended)) return;
  const without = nodes.filter((n) => !n.intended).map((n) => n.name);
  throw new SlicecheckError(
    "USAGE",
    `--suites ${layoutSuites.join(",")} checks the layout a run applies, or each node's intended layout; give --layout FILE -c NAME too, or mig_config (and mig_layout) for ${without.join(", ")} in the inventory`,
  );
}

/** What needs the selected nodes: `--drain` needs a `slurm_node` to drain; `--run-id` a run id. */
export function checkSlurmOptions(o: RunCliOptions, nodes: readonly NodeSpec[]): void {
  if (o.drain && !nodes.some((n) => n.slurmNode))
    throw new SlicecheckError(
      "USAGE",
      "--drain drains the nodes' Slurm nodes, but no selected node has slurm_node in the inventory; set it (the node's name in Slurm) or drop --drain",
    );
  if (o.runId !== undefined && !/^sc-[A-Za-z0-9-]+$/.test(o.runId))
    throw new SlicecheckError(
      "USAGE",
      `--run-id expects an id like sc-20261129T101500Z-1a2b3c, got '${o.runId}'`,
    );
}

/** `--tenants 2-7` (the default), `2,4,7`, or `none`; bad input is refused before any node is touched. */
export function tenantsOption(s: string | undefined): number[] {
  if (s === undefined) return [2, 3, 4, 5, 6, 7];
  if (s.trim() === "none") return [];
  const t = parseTenants(s);
  if (!t)
    throw new SlicecheckError(
      "USAGE",
      `--tenants: '${s}' is not a list of tenant counts from 2 to 7 (e.g. 2-7, 2,4,7, or none)`,
    );
  return t;
}

/** `--local`: the one selected node is this machine; its commands run here (local transport). */
export function localNode(nodes: NodeSpec[], reservation?: string): void {
  if (nodes.length !== 1)
    throw new SlicecheckError(
      "USAGE",
      `--local runs one node's commands on this machine, but ${nodes.length} nodes are selected; select the node this is with --nodes`,
    );
  const n = nodes[0] as NodeSpec;
  n.transport = "local";
  // A --via slurm task on its node: its own job, for the interlocks (a job holding the node
  // alone, in a reservation, keeps tenants off it as a drain does).
  const job = process.env.SLURM_JOB_ID;
  if (job && n.slurmNode && process.env.SLURMD_NODENAME === n.slurmNode)
    n.slurmJob = { jobId: job, reservation: reservation ?? null };
}
