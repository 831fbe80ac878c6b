// The per-GPU state machine that changes a node: destroy what is not wanted (CIs, then GIs),
// change the MIG mode (and reset an Ampere GPU whose change stays pending, only when allowed),
// plan again from the live catalogue once MIG is on, create GIs and CIs in the planned order,
// then re-read and compare. A success line is never taken for success: every change is judged
// by its exit code and parsed output, and the result by the re-read.

import { SlicecheckError } from "../../errors.js";
import {
  type Argv,
  destroyComputeInstances,
  destroyGpuInstances,
  type MigOp,
  parseMigOp,
  resetGpu,
  setMigMode,
} from "../../nvsmi/index.js";
import type { Transport } from "../../transport/types.js";
import { batchArgv, changePlan, createBatches, describeGi, driftOf } from "./compare.js";
import { nodeCommandError, readGpuMig, readGpuMode, readListings } from "./read.js";
import type {
  GpuChangePlan,
  GpuListings,
  GpuMigState,
  GpuReport,
  GpuSnapshot,
  GpuTarget,
  StepTimings,
} from "./types.js";

/** A mode change or a reset may take the driver many seconds on a real node. */
const MODE_TIMEOUT_MS = 300_000;
const CHANGE_TIMEOUT_MS = 120_000;

export interface ConvergeInput {
  t: Transport;
  gpu: GpuSnapshot;
  target: GpuTarget;
  plan: GpuChangePlan;
  allowReset: boolean;
  modeNeedsReset: boolean;
  placementSyntax: boolean;
  /** Plans again from the live catalogue, read once MIG is on (the preflight may not have had it). */
  retarget: (listings: GpuListings | null) => GpuTarget;
}

export function emptyReport(gpu: GpuSnapshot, plan: GpuChangePlan | null): GpuReport {
  return {
    index: gpu.index,
    name: gpu.name,
    status: "unchanged",
    drift: plan?.drift ?? [],
    remaining: [],
    planned: (plan?.commands ?? []).map((c) => [...c]),
    commands: [],
    timings: {},
    verified: [],
    notes: [],
    error: null,
  };
}

class Runner {
  constructor(
    private readonly t: Transport,
    private readonly report: GpuReport,
  ) {}

  async timed<T>(step: keyof StepTimings, fn: () => Promise<T>): Promise<T> {
    const t0 = Date.now();
    try {
      return await fn();
    } finally {
      this.report.timings[step] = (this.report.timings[step] ?? 0) + (Date.now() - t0);
    }
  }

  /** Runs one change; throws unless it exited 0 and printed no error line. */
  async change(argv: Argv, timeoutMs = CHANGE_TIMEOUT_MS): Promise<MigOp[]> {
    const node = this.t.node.name;
    const t0 = Date.now();
    // Leased: runs only while this controller's lease on the node holds (LEASE_LOST otherwise).
    const r = await this.t.exec({ argv }, { privileged: true, timeoutMs, leased: true });
    this.report.commands.push({
      argv: [...argv],
      exitCode: r.timedOut ? null : r.exitCode,
      ms: Date.now() - t0,
      output: `${r.stdout}${r.stderr}`.trim(),
    });
    let ops: MigOp[];
    try {
      ops = parseMigOp(r.stdout).ops;
    } catch (e) {
      throw nodeCommandError(node, argv, r, `printed what slicecheck cannot read: ${String(e)}`);
    }
    const err = ops.find((o) => o.op === "error");
    if (r.exitCode !== 0 || err) {
      throw nodeCommandError(
        node,
        argv,
        r,
        err?.op === "error" ? `failed: ${err.reason}` : "failed",
      );
    }
    return ops;
  }
}

async function destroy(run: Runner, plan: GpuChangePlan): Promise<void> {
  if (plan.destroyCisOf.length === 0 && plan.destroyGis.length === 0) return;
  await run.timed("destroyMs", async () => {
    if (plan.destroyCisOf.length > 0) {
      await run.change(destroyComputeInstances(plan.gpu, plan.destroyCisOf));
    }
    if (plan.destroyGis.length > 0)
      await run.change(destroyGpuInstances(plan.gpu, plan.destroyGis));
  });
}

const onOff = (b: boolean) => (b ? "Enabled" : "Disabled");

/**
 * Sets the mode and, for an Ampere change that stays pending, resets the GPU if allowed. Returns
 * the state to plan the geometry on: an enable or a reset leaves no GIs (the verify re-reads
 * them anyway); a cancelled pending change leaves them as they were.
 */
async function changeMode(
  x: ConvergeInput,
  run: Runner,
  plan: GpuChangePlan,
): Promise<GpuMigState> {
  const { t, gpu } = x;
  const want = x.target.migEnabled;
  if (plan.setMode !== null) {
    await run.timed("modeMs", () => run.change(setMigMode(want, gpu.index), MODE_TIMEOUT_MS));
  }
  let s = await run.timed("modeMs", () => readGpuMode(t, gpu.index));
  let gis = gpu.migCurrent ? gpu.gis.filter((g) => !plan.destroyGis.includes(g.id)) : [];
  if (s.migCurrent !== want && s.migPending === want && x.modeNeedsReset) {
    if (!x.allowReset) {
      throw new SlicecheckError(
        "INTERLOCK",
        `${t.node.name} GPU ${gpu.index}: MIG mode ${onOff(want)} is pending and takes effect only after a GPU reset (nvidia-smi --gpu-reset -i ${gpu.index}); rerun with --allow-reset, or run \`slicecheck restore\` to undo what was changed`,
        { node: t.node.name, gpu: gpu.index },
      );
    }
    await run.timed("resetMs", () => run.change(resetGpu(gpu.index), MODE_TIMEOUT_MS));
    s = await run.timed("resetMs", () => readGpuMode(t, gpu.index));
    gis = [];
  }
  if (s.migCurrent !== want || s.migPending !== want) {
    throw new SlicecheckError(
      "NODE_COMMAND",
      `${t.node.name} GPU ${gpu.index}: after the mode change MIG reads current ${onOff(s.migCurrent)}, pending ${onOff(s.migPending)}; wanted ${onOff(want)}`,
      { node: t.node.name, gpu: gpu.index },
    );
  }
  return { ...s, gis };
}

async function create(run: Runner, plan: GpuChangePlan, placementSyntax: boolean): Promise<void> {
  if (plan.create.length === 0) return;
  const ids = new Map<string, number>();
  const at = (p: { start: number; size: number }) => `${p.start}:${p.size}`;
  await run.timed("createMs", async () => {
    for (const batch of createBatches(plan.create, placementSyntax)) {
      const argv = batchArgv(batch, (gi) => ids.get(at(gi)));
      if (batch.kind === "gis") {
        const ops = await run.change(argv);
        // nvidia-smi reports the GIs in the order they were asked for.
        const made = ops.flatMap((o) => (o.op === "create-gi" ? [o.gpuInstanceId] : []));
        const cis = ops.filter((o) => o.op === "create-ci").length;
        if (made.length !== batch.steps.length || (batch.withDefaultCi && cis !== made.length)) {
          throw new SlicecheckError(
            "NODE_COMMAND",
            `\`${argv.join(" ")}\` reported ${made.length} GPU instances and ${cis} compute instances for ${batch.steps.length} asked`,
          );
        }
        for (const [i, s] of batch.steps.entries()) ids.set(at(s.placement), made[i]!);
        continue;
      }
      if (argv.some((a) => a.startsWith("<GI@"))) {
        throw new SlicecheckError("INTERNAL", `no GPU instance was created for ${argv.join(" ")}`);
      }
      const ops = await run.change(argv);
      const made = ops.filter((o) => o.op === "create-ci").length;
      if (made !== batch.step.ciProfileIds.length) {
        throw new SlicecheckError(
          "NODE_COMMAND",
          `\`${argv.join(" ")}\` reported ${made} compute instances, ${batch.step.ciProfileIds.length} were asked for`,
        );
      }
    }
  });
}

/** Converges one GPU on its target and verifies it; never throws, the report says what happened. */
export async function converge(x: ConvergeInput): Promise<GpuReport> {
  const report = emptyReport(x.gpu, x.plan);
  report.status = "changed";
  report.notes.push(...x.target.notes);
  const run = new Runner(x.t, report);
  let target = x.target;
  try {
    let plan = x.plan;
    await destroy(run, plan);
    if (plan.setMode !== null || plan.resetPending) {
      const s = await changeMode(x, run, plan);
      if (target.migEnabled) {
        if (!target.live) {
          const listings = await readListings(x.t, x.gpu.index);
          target = x.retarget(listings.get(x.gpu.index) ?? null);
        }
        plan = changePlan(s, target, {
          modeNeedsReset: x.modeNeedsReset,
          placementSyntax: x.placementSyntax,
        });
        // After an enable or a reset the GPU has no GIs; anything else is destroyed first.
        await destroy(run, plan);
      }
    }
    await create(run, plan, x.placementSyntax);
  } catch (e) {
    report.status = "failed";
    report.error = e instanceof Error ? e.message : String(e);
  }
  // Verify even after a failure: the report then says where the GPU was left.
  try {
    const s = await run.timed("verifyMs", () => readGpuMig(x.t, x.gpu.index));
    report.verified = s.migCurrent ? s.gis.map(describeGi) : [];
    const remaining = driftOf(s, target);
    report.remaining = remaining;
    if (remaining.length > 0 && report.status !== "failed") {
      report.status = "mismatch";
      report.error = `after the changes GPU ${x.gpu.index} still differs from ${target.source}: ${remaining.join("; ")}`;
    }
  } catch (e) {
    report.status = "failed";
    report.error ??= e instanceof Error ? e.message : String(e);
  }
  return report;
}
