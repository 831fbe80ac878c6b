// nccl: nccl-tests' all_reduce_perf with one rank inside each MIG instance completes without
// wrong results. Besides that supported path, the other communication paths are recorded:
// - per GPU with two or more MIG instances, an all_reduce with one rank per instance, each in
//   its own process seeing only its instance (the built-in allreduce, as jobs run NCCL on MIG):
//   the documented path is host memory or the network, well below the whole card (reference
//   workloads.md 1.5), so SHM or NET below the whole card's figure passes as a documented
//   constraint with its busbw and transport; a claimed P2P path fails (MIG_P2P_CLAIMED); a
//   documented refusal by NCCL passes as the constraint it is; a hung rank is broken;
// - per MIG GPU, the P2P capability of each profile (the P2P column of `mig -lgip`);
// - per node with two or more GPUs without MIG, an all_reduce across them (`-g N`) with its bus
//   bandwidth, so that what slicing gives up shows next to the per-instance figures; and the
//   built-in allreduce with one rank per whole GPU, the same program as across instances.
// These run after the node's per-instance runs have finished, so they never share a GPU with
// a measurement.
import {
  allreduceRanksScript,
  current,
  type ExecAnswer,
  fail,
  forEachGpu,
  forEachInstance,
  forEachNode,
  harness,
  judgeCrossInstanceRanks,
  judgeMultiGpuAllReduce,
  judgeProfilesP2P,
  judgeWholeGpuRanks,
  type SuiteNode,
  type VerdictView,
} from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  runsWorkloads: true,
  labels: { epic: "MIG partition validation", feature: "NCCL" },
});
const nccl = run.workload("nccl");
const ARGS = ["-b", "8M", "-e", "128M", "-f", "2"];

/** The node's per-instance runs, settled (whatever their outcome: that is their own check). */
async function settled(node: SuiteNode): Promise<void> {
  await Promise.allSettled(node.instances.map((i) => nccl.result(i)));
}

function judged(v: VerdictView, what: string): void {
  const check = current();
  check.figures(v.figures);
  check.note(v.message);
  for (const e of v.evidence) check.evidence(e.name, e.content);
  if (v.kind) check.passKind(v.kind);
  if (v.status === "broken") brokenIf(`${what}: ${v.message}`, v.code);
  if (v.status === "failed") fail(v.code, `${what}: ${v.message}`);
}

const timeoutS = () => Math.max(60, run.options.durationS * 4);

/** The built-in allreduce, one process per device, all started together (src/workloads/ranks.ts). */
async function allreduceRanks(node: SuiteNode, devices: string[]): Promise<ExecAnswer> {
  const program = await run.program(node, "allreduce");
  const t = timeoutS();
  const shell = allreduceRanksScript({ program, devices, bytes: "64M", iters: 20, timeoutS: t });
  current().parameter("ranks", String(devices.length));
  return node.exec({ shell }, { timeoutS: t + 30 });
}

describe("nccl", () => {
  before(() => nccl.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance to run nccl-tests on", () =>
        brokenIf(node.error ?? `${node.name}: no instance`));
    forEachGpu(node, (gpu) => {
      forEachInstance(gpu, (inst) => {
        it("all_reduce_perf completes without wrong results", async () => {
          const r = await nccl.result(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("all_reduce_perf", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail("NCCL_FAILED", `${node.name} ${inst.label} (${inst.profile}): ${r.reason}`);
        });
      });
      if (!gpu.migEnabled || gpu.instances.length === 0) return;
      it("P2P capability of each profile", async () => {
        const r = await node.exec(["nvidia-smi", "mig", "-lgip", "-i", String(gpu.index)]);
        if (r.exitCode !== 0)
          return brokenIf(`nvidia-smi mig -lgip exited ${r.exitCode}: ${r.stdout}${r.stderr}`);
        judged(judgeProfilesP2P(r.stdout, gpu.index), `${node.name} GPU ${gpu.index}`);
      });
      if (gpu.instances.length < 2) return;
      it("all_reduce with one rank per MIG instance goes through host memory, below the whole card", async () => {
        await settled(node);
        current().parameter("instances", gpu.instances.map((i) => i.label).join(","));
        const r = await allreduceRanks(
          node,
          gpu.instances.map((i) => i.uuid),
        );
        judged(
          judgeCrossInstanceRanks(r, gpu.instances.length, gpu),
          `${node.name} GPU ${gpu.index}`,
        );
      });
    });
    const whole = node.gpus.filter((g) => !g.migEnabled);
    if (whole.length >= 2)
      it(`all_reduce across ${whole.length} whole GPUs (-g ${whole.length}) completes without wrong results`, async () => {
        await settled(node);
        const r = await node.exec(["all_reduce_perf", ...ARGS, "-g", String(whole.length)], {
          env: { CUDA_VISIBLE_DEVICES: whole.map((g) => g.uuid).join(",") },
          timeoutS: timeoutS(),
        });
        // The per-instance figures beside it: what one rank per slice gets.
        const single = await Promise.allSettled(node.instances.map((i) => nccl.result(i)));
        const algbw = single
          .map((s) => (s.status === "fulfilled" ? s.value.metrics.algbw : undefined))
          .filter((x): x is number => x !== undefined);
        if (algbw.length) current().figures({ "single-rank algbw GB/s (min)": Math.min(...algbw) });
        judged(judgeMultiGpuAllReduce(r, whole.length), node.name);
      });
    if (whole.length >= 2)
      it(`all_reduce with one rank per whole GPU (${whole.length} processes) completes without wrong results`, async () => {
        await settled(node);
        const r = await allreduceRanks(
          node,
          whole.map((g) => g.uuid),
        );
        judged(judgeWholeGpuRanks(r, whole.length), node.name);
      });
  });
});
