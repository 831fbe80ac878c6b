// nccl: nccl-tests' all_reduce_perf with one rank inside each MIG instance completes without
// wrong results. Besides that supported path, the other communication paths are recorded:
// - per GPU with two or more MIG instances, an all_reduce with one rank per instance, each in
//   its own process seeing only its instance (the built-in allreduce, as jobs run NCCL on MIG):
//   the documented path is host memory or the network, well below the whole card (reference
//   workloads.md 1.5), so SHM or NET below the whole card's figure passes as a documented
//   constraint with its busbw and transport; a claimed P2P path fails (MIG_P2P_CLAIMED); a
//   documented refusal by NCCL passes as the constraint it is; a hung rank is broken;
// - per MIG GPU, the P2P capability of each profile (the P2P column of `mig -lgip`);
// - per node with two or more GPUs without MIG, their topology and NVLink (`nvidia-smi topo -m`,
//   `nvlink -s`, `nvlink -e`) against the links the catalogue says the board has, and an
//   all_reduce across them (`-g N`, NCCL_DEBUG=INFO) with its bus bandwidth against a floor and
//   its transport (NVLink where the topology says NV#), so that what slicing gives up shows
//   next to the per-instance figures and a link trained down to PCIe fails; and the built-in
//   allreduce with one rank per whole GPU, the same program as across instances.
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
  judgeAllReduceOverNvlink,
  judgeCrossInstanceRanks,
  judgeNvlinkTopology,
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
    const whole = node.gpus.filter((g) => !g.migEnabled && !g.lost);
    if (whole.length < 2) return;
    // Read once, by the topology check or (if that one could not) by the all_reduce.
    let topo: Promise<ExecAnswer> | null = null;
    const readTopo = () => {
      topo ??= node.exec(["nvidia-smi", "topo", "-m"]);
      return topo;
    };
    it(`topology and NVLink of the ${whole.length} whole GPUs`, async () => {
      const t = await readTopo();
      const s = await node.exec(["nvidia-smi", "nvlink", "-s"]);
      const e = await node.exec(["nvidia-smi", "nvlink", "-e"]);
      for (const [what, r] of [
        ["topo -m", t],
        ["nvlink -s", s],
      ] as const)
        if (r.exitCode !== 0)
          return brokenIf(`nvidia-smi ${what} exited ${r.exitCode}: ${r.stdout}${r.stderr}`);
      const out = {
        topo: t.stdout,
        nvlinkStatus: s.stdout,
        nvlinkErrors: e.exitCode === 0 ? e.stdout : null,
      };
      judged(judgeNvlinkTopology(out, whole), node.name);
    });
    it(`all_reduce across ${whole.length} whole GPUs (-g ${whole.length}) completes without wrong results`, async () => {
      await settled(node);
      const r = await node.exec(["all_reduce_perf", ...ARGS, "-g", String(whole.length)], {
        // INFO names the transport of every connection (P2P, SHM, NET).
        env: { CUDA_VISIBLE_DEVICES: whole.map((g) => g.uuid).join(","), NCCL_DEBUG: "INFO" },
        timeoutS: timeoutS(),
      });
      // The per-instance figures beside it: what one rank per slice gets.
      const single = await Promise.allSettled(node.instances.map((i) => nccl.result(i)));
      const algbw = single
        .map((s) => (s.status === "fulfilled" ? s.value.metrics.algbw : undefined))
        .filter((x): x is number => x !== undefined);
      if (algbw.length) current().figures({ "single-rank algbw GB/s (min)": Math.min(...algbw) });
      const t = await readTopo().catch(() => null);
      const floor = run.options.busbwFloorGBs ?? null;
      judged(
        judgeAllReduceOverNvlink(r, whole, t?.exitCode === 0 ? t.stdout : null, floor),
        node.name,
      );
    });
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
