// One node's part of a run: a suite's workload on all of the node's instances together, over
// the node's session (which opens a second connection only when the channels run out).
import type { Output } from "../mig/apply/bundle.js";
import type { BesideLockOptions, Transport } from "../transport/types.js";
import {
  type BuiltWorkloads,
  buildScript,
  needsBuild,
  parseBuildOutput,
  workloadSources,
} from "./build.js";
import type { Instance, NodeInventory } from "./instances.js";
import { type InstanceOutcome, type LaunchOptions, runOnInstances } from "./launcher.js";
import {
  gpuBurnSpec,
  ncclSpec,
  serveSpec,
  stressSpec,
  trainStepSpec,
  type WorkloadSpec,
} from "./specs.js";

/** The workloads a node runs for the suites named after them (the built-in stress and nccl). */
export type NodeWorkload = "stress" | "nccl" | "serve";

export interface SuiteResult {
  suite: NodeWorkload | "gpu-burn" | "train-step";
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
  suites: readonly NodeWorkload[];
  durationS: number;
}

/** The key of the build check's probe in a discovery's call (SessionOpenOptions.withDiscovery). */
export const BUILD_KEY = "build";

/** The build check's probe as a read, for a call that makes it with others: its answer is then
 * passed to builtins as `probed`. */
export function buildProbe(): { shell: string } {
  return { shell: buildScript({ sources: workloadSources(), probe: true }) };
}

/** The built-in workloads on the node: pre-installed ones on PATH, else built with the node's
 * own nvcc into a cache keyed by the sources (binaries of a newer CUDA do not run on older
 * drivers, so they are never shipped from here). `exec`: passed on to the check (a read that
 * waits for the lease, its abort). `probed`: the probe's answer from a call that made it
 * (buildProbe); where that call failed, or the probe ran past its deadline there, it is asked
 * again on its own. */
export function builtins(
  t: Transport,
  exec?: BesideLockOptions,
  probed?: Promise<readonly Output[]> | null,
): Promise<BuiltWorkloads> {
  // Asked once per connection (the run's session): the run asks early, as it locks the node,
  // so that the stress phase finds them ready. A failed build is asked again next time.
  let p = built.get(t);
  if (!p) {
    p = (async () => {
      const given = probed
        ? await probed.then(
            ([o]) => o ?? null,
            () => null,
          )
        : null;
      // The probe first, without the sources: a node with the binaries (on PATH, or built by an
      // earlier run) is answered by it. The full script is 96 KB, which every shell between
      // the login and sh parses again (about 20 ms of the node's CPU), on every run.
      const probe =
        given && !given.timedOut && given.exitCode !== null
          ? given
          : await t.exec(buildProbe(), { timeoutMs: 600_000, ...exec });
      const r = needsBuild(probe.stdout)
        ? await t.exec(
            { shell: buildScript({ sources: workloadSources() }) },
            { timeoutMs: 600_000, ...exec },
          )
        : probe;
      return parseBuildOutput(r.stdout, { node: t.node.name, stderr: r.stderr });
    })();
    built.set(t, p);
    p.catch(() => built.delete(t));
  }
  return p;
}
const built = new WeakMap<Transport, Promise<BuiltWorkloads>>();

/** Which programs the node has, in one round trip. */
async function programs(t: Transport, names: readonly string[]): Promise<Set<string>> {
  const r = await t.exec(
    { shell: names.map((n) => `command -v ${n} >/dev/null 2>&1 && echo ${n}`).join("; ") },
    { timeoutMs: 30_000 },
  );
  return new Set(r.stdout.split("\n").filter(Boolean));
}

/** One suite's workload on the given instances of one node, all at once. `skipped` says why
 * it could not run there (its program is missing, the built-ins could not be built). */
export async function runWorkloadOnNode(
  t: Transport,
  instances: readonly Instance[],
  workload: NodeWorkload | "gpu-burn" | "train-step",
  o: Omit<LaunchOptions, "repetition"> & {
    durationS: number;
    /** The argv that runs the program on an instance (inside its container): issue 23. */
    wrap?: (i: Instance, program: string, args: readonly string[]) => string[];
  },
): Promise<SuiteResult> {
  let spec: WorkloadSpec;
  if (workload === "stress" || workload === "train-step" || workload === "serve") {
    spec =
      workload === "stress"
        ? stressSpec(o.durationS)
        : workload === "serve"
          ? serveSpec(o.durationS)
          : trainStepSpec(o.durationS);
    try {
      spec.program = (await builtins(t)).binaries[workload];
    } catch (e) {
      return {
        suite: workload,
        skipped: e instanceof Error ? e.message : String(e),
        outcomes: [],
      };
    }
  } else {
    spec = workload === "nccl" ? ncclSpec() : gpuBurnSpec(o.durationS);
    const have = await programs(t, [spec.program]);
    if (!have.has(spec.program))
      return {
        suite: workload,
        skipped: `${spec.program} (${workload === "nccl" ? "nccl-tests" : "gpu-burn"}) is not on the node's PATH`,
        outcomes: [],
      };
  }
  const wrap = o.wrap;
  const per = wrap
    ? (i: Instance): WorkloadSpec => {
        const [program, ...args] = wrap(i, spec.program, spec.args);
        return { ...spec, program: program ?? spec.program, args };
      }
    : spec;
  const outcomes = await runOnInstances([t], instances, per, o);
  return { suite: workload, skipped: null, outcomes };
}

export function instanceLabel(i: Instance): string {
  return i.gpuInstanceId === null
    ? `gpu${i.gpu}`
    : `gpu${i.gpu}/gi${i.gpuInstanceId}/ci${i.computeInstanceId ?? 0}`;
}
