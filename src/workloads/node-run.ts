// One node's part of a run: connections enough for all its instances at once, the instances
// found on it, and each suite's workload run on all of them together.
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { openTransport } from "../transport/open.js";
import { MAX_CHANNELS } from "../transport/ssh.js";
import type { Transport } from "../transport/types.js";
import { type BuiltWorkloads, buildScript, parseBuildOutput, workloadSources } from "./build.js";
import { discoverInstances, type Instance, type NodeInventory } from "./instances.js";
import { type InstanceOutcome, type LaunchOptions, runOnInstances } from "./launcher.js";
import { ncclSpec, stressSpec, type WorkloadSpec } from "./specs.js";

export type SuiteName = "stress" | "nccl";

export interface SuiteResult {
  suite: SuiteName;
  /** Why the suite could not run on this node (tool missing…); null when it ran. */
  skipped: string | null;
  outcomes: InstanceOutcome[];
}

export interface NodeRunResult {
  node: string;
  inventory: NodeInventory | null;
  suites: SuiteResult[];
  /** The node could not be checked at all (unreachable, nvidia-smi failing). */
  error: string | null;
}

export interface NodeRunOptions extends Omit<LaunchOptions, "repetition"> {
  runId: string;
  suites: readonly SuiteName[];
  durationS: number;
}

/** The built-in workloads on the node: pre-installed ones on PATH, else built with the node's
 * own nvcc into a cache keyed by the sources (binaries of a newer CUDA do not run on older
 * drivers, so they are never shipped from here). */
export async function builtins(t: Transport): Promise<BuiltWorkloads> {
  const script = buildScript({ sources: workloadSources() });
  const r = await t.exec({ shell: script }, { timeoutMs: 600_000 });
  return parseBuildOutput(r.stdout, { node: t.node.name, stderr: r.stderr });
}

/** Which programs the node has, in one round trip. */
async function programs(t: Transport, names: readonly string[]): Promise<Set<string>> {
  const r = await t.exec(
    { shell: names.map((n) => `command -v ${n} >/dev/null 2>&1 && echo ${n}`).join("; ") },
    { timeoutMs: 30_000 },
  );
  return new Set(r.stdout.split("\n").filter(Boolean));
}

export async function runNode(node: NodeSpec, o: NodeRunOptions): Promise<NodeRunResult> {
  const first = openTransport(node, { runId: o.runId });
  const transports: Transport[] = [first];
  try {
    await first.connect();
    const inventory = await discoverInstances(first);
    const extra = Math.ceil(inventory.instances.length / MAX_CHANNELS) - 1;
    for (let i = 0; i < extra; i++) {
      const t = openTransport(node, { runId: o.runId });
      await t.connect();
      transports.push(t);
    }
    const have = await programs(first, ["all_reduce_perf"]);
    const suites: SuiteResult[] = [];
    for (const suite of o.suites) {
      if (o.signal?.aborted) break;
      let spec: WorkloadSpec;
      if (suite === "stress") {
        spec = stressSpec(o.durationS);
        try {
          spec.program = (await builtins(first)).binaries.stress;
        } catch (e) {
          suites.push({ suite, skipped: e instanceof Error ? e.message : String(e), outcomes: [] });
          continue;
        }
      } else {
        spec = ncclSpec();
        if (!have.has(spec.program)) {
          suites.push({
            suite,
            skipped: "all_reduce_perf (nccl-tests) is not on the node's PATH",
            outcomes: [],
          });
          continue;
        }
      }
      const outcomes = await runOnInstances(transports, inventory.instances, spec, o);
      suites.push({ suite, skipped: null, outcomes });
    }
    return { node: node.name, inventory, suites, error: null };
  } catch (e) {
    const msg =
      e instanceof SlicecheckError
        ? `[${e.code}] ${e.message}`
        : e instanceof Error
          ? e.message
          : String(e);
    return { node: node.name, inventory: null, suites: [], error: msg };
  } finally {
    await Promise.all(transports.map((t) => t.close().catch(() => {})));
  }
}

export function instanceLabel(i: Instance): string {
  return i.gpuInstanceId === null
    ? `gpu${i.gpu}`
    : `gpu${i.gpu}/gi${i.gpuInstanceId}/ci${i.computeInstanceId ?? 0}`;
}
