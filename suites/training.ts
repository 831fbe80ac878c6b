// training: a data-parallel training step (train-step: three GEMMs, then an NCCL all_reduce of
// the gradient) runs without wrong results on every 3g and 4g MIG instance, and once across all
// whole GPUs of a node in one process (one rank per GPU). Its step times are recorded as
// measurements (step_ms, compute_ms, allreduce_ms, steps_per_s), so `slicecheck diff` compares
// them across drivers and flags a slower step.
//
// Why 3g and 4g: they are the slices sites hand to training jobs (half a GPU); a 1g or 2g step
// on the sizes a training job uses measures little but memory pressure, so those instances get a
// visible not-assessed check that says so rather than silently nothing. On a MIG instance the
// process sees one device, so the all_reduce is a 1-rank collective: timed (NCCL still runs its
// kernels) but moving no data between GPUs, and the check says so. A node without NCCL
// (train-step exit 4) cannot be measured: broken with its loader's reason, never a pass.
import { readFileSync } from "node:fs";
import {
  broken,
  type CheckHandle,
  current,
  fail,
  forEachGpu,
  forEachInstance,
  forEachNode,
  harness,
  notAssessed,
  type SuiteGpu,
  type SuiteInstance,
  type SuiteNode,
  trainStep,
} from "slicecheck/suite";
import { brokenIf, workloadFigures } from "./lib/judge.js";

const run = harness({
  runsWorkloads: true,
  labels: { epic: "MIG partition validation", feature: "Training" },
});

/** The MIG profiles a training step runs on (`3g.40gb`, `4g.47gb`, `3g.48gb+gfx`...). */
const TRAINING_PROFILE = /^[34]g\./;

const migTargets = run.nodes.flatMap((n) =>
  n.gpus
    .filter((g) => g.migEnabled)
    .flatMap((g) => g.instances.filter((i) => TRAINING_PROFILE.test(i.profile))),
);
const train = run.workload("train-step", { instances: migTargets });
const wholeOf = (node: SuiteNode): SuiteGpu[] =>
  node.gpus.filter((g) => !g.migEnabled && !g.lost && g.instances.length > 0);

/** Why NCCL could not be loaded, from the workload's own line. */
function noNccl(output: string): string {
  try {
    return trainStep.parseTrainStepOutput(output).noNccl ?? "no reason printed";
  } catch {
    return "no reason printed";
  }
}

function readLog(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

function oneRankNote(check: CheckHandle, ranks: number | undefined): void {
  if (ranks === 1)
    check.note(
      "one device visible: the all_reduce is a 1-rank collective, timed but moving no data between GPUs",
    );
}

async function onInstance(node: SuiteNode, inst: SuiteInstance): Promise<void> {
  const r = await train.result(inst);
  const check = current();
  workloadFigures(check, r);
  check.phase("train-step", r.startMs, r.stopMs, r.status);
  const what = `${node.name} ${inst.label} (${inst.profile})`;
  if (r.exitCode === trainStep.TRAIN_EXIT_NO_NCCL)
    broken("TOOL_MISSING", `${what}: NCCL could not be loaded: ${noNccl(readLog(r.log))}`);
  if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
  if (r.status === "failed") fail("TRAIN_FAILED", `${what}: ${r.reason}`);
  oneRankNote(check, r.metrics.ranks);
}

/** All whole GPUs of the node in one process, one rank each: the all_reduce crosses them. */
async function onWholeCards(node: SuiteNode, gpus: SuiteGpu[]): Promise<void> {
  const check = current();
  const durationS = run.options.durationS;
  const program = await check.step("build train-step", () => run.program(node, "train-step"));
  const startMs = Date.now();
  const r = await node.exec([program, "--duration", String(durationS)], {
    env: { CUDA_VISIBLE_DEVICES: gpus.map((g) => g.uuid).join(",") },
    timeoutS: durationS + 60,
  });
  check.window(startMs, Date.now());
  check.evidence("train-step output", `${r.stdout}${r.stderr}`);
  const what = `${node.name} GPUs ${gpus.map((g) => g.index).join(",")}`;
  if (r.exitCode === trainStep.TRAIN_EXIT_NO_NCCL)
    broken("TOOL_MISSING", `${what}: NCCL could not be loaded: ${noNccl(r.stdout)}`);
  let out: ReturnType<typeof trainStep.parseTrainStepOutput>;
  try {
    out = trainStep.parseTrainStepOutput(r.stdout);
  } catch (e) {
    return broken("WORKLOAD_UNDECIDED", `${what}: ${(e as Error).message}`);
  }
  // The records keep the figures under the first GPU's whole-GPU instance.
  const owner = gpus[0]!.instances[0]!;
  const metrics = trainStep.trainStepMetrics(out);
  for (const m of metrics) check.measure(owner, m.metric, m.value, m.unit);
  check.figures({
    ...Object.fromEntries(metrics.map((m) => [m.metric, m.value])),
    exitCode: r.exitCode,
  });
  if (out.stopped) broken("WORKLOAD_UNDECIDED", `${what}: stopped by ${out.stopped.signal}`);
  if (r.exitCode !== 0 || (out.final?.errors ?? 0) > 0)
    fail(
      "TRAIN_FAILED",
      `${what}: exit ${r.exitCode}, ${out.final?.errors ?? "unknown"} wrong results`,
    );
  if (!out.final) broken("WORKLOAD_UNDECIDED", `${what}: no final line`);
  if (out.final.ranks !== gpus.length)
    fail(
      "TRAIN_RANKS",
      `${what}: ${out.final.ranks} ranks joined the all_reduce, not ${gpus.length}`,
    );
  oneRankNote(check, out.final.ranks);
}

describe("training", () => {
  before(() => train.start());
  forEachNode(run.nodes, (node) => {
    if (node.instances.length === 0)
      it("has an instance or a whole GPU to train on", () =>
        brokenIf(node.error ?? `${node.name}: no MIG instance and no GPU without MIG`));
    forEachGpu(node, (gpu) => {
      if (!gpu.migEnabled) return;
      forEachInstance(gpu, (inst) => {
        if (!TRAINING_PROFILE.test(inst.profile)) {
          it("runs a training step", () =>
            notAssessed(
              "NOT_A_TRAINING_PROFILE",
              `${inst.profile}: the training suite runs on 3g and 4g instances and whole GPUs; a smaller slice is not where training runs`,
            ));
          return;
        }
        it("runs a training step without wrong results", () => onInstance(node, inst));
      });
    });
    const whole = wholeOf(node);
    if (whole.length > 0)
      it(`runs a training step across ${whole.length} whole GPU(s), one rank each`, () =>
        onWholeCards(node, whole));
  });
});
