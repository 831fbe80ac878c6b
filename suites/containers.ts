// containers (issue 23): the workloads tenants run in containers, one per MIG instance, each in
// the image chosen for its profile or for it (`containers:` in slicecheck.config.yaml and the
// inventory), through the node's runtime (podman by CDI name, docker by --gpus device=UUID,
// enroot by NVIDIA_VISIBLE_DEVICES=UUID in a container `enroot create` made of a .sqsh, removed
// at the end).
// Per instance: its image's CUDA is one the driver runs (else it is refused before any
// container starts: IMAGE_CUDA_TOO_NEW, unless it carries forward-compatibility libraries the
// toolkit uses, which its check then reports: forwardCompat); its container starts and sees exactly its instance
// (`nvidia-smi -L` inside; CONTAINER_SEES_OTHERS); the built-in stress then runs in every
// instance's container at once, each judged at its share of the GPU as the stress suite judges
// it, and per GPU the containers of its images (different CUDA versions side by side) ran at
// the same time. Container start time is a figure beside the same probe started bare.
import { readFileSync } from "node:fs";
import {
  broken,
  containers,
  current,
  fail,
  forEachGpu,
  forEachInstance,
  forEachNode,
  harness,
  notAssessed,
  type SuiteInstance,
  type WorkloadBatch,
  type WorkloadResult,
} from "slicecheck/suite";
import { EnrootLedger } from "./lib/containers-enroot.js";
import {
  type InstancePlan,
  type NodePlan,
  planNode,
  runnable,
  whyNotRun,
  wrapOf,
} from "./lib/containers-node.js";
import { brokenIf, workloadFigures } from "./lib/judge.js";
import { judgeShare } from "./lib/share.js";

const run = harness({
  runsWorkloads: true,
  labels: { epic: "MIG partition validation", feature: "Containers" },
});
const ledger = new EnrootLedger(run.options.runId);
const plans = run.eachNode((node) => planNode(run, node, ledger));
const byNode = new Map<string, NodePlan>();
let batch: WorkloadBatch | null = null;

/** The node's plan, or the check broken with why there is none. */
async function planOf(node: string): Promise<NodePlan> {
  const n = run.nodes.find((x) => x.name === node)!;
  try {
    return await plans.result(n);
  } catch (e) {
    return broken("CONTAINER_UNDECIDED", `${node}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Its plan entry, with a plan-wide problem, a missing image or a refused one as the check's
 * outcome (the node's lack of a runtime is never a pass). */
async function entryOf(inst: SuiteInstance): Promise<InstancePlan> {
  const plan = await planOf(inst.node);
  if (plan.problem) notAssessed(problemCode(plan), plan.problem);
  const p = plan.instances.get(inst.uuid);
  if (!p?.image)
    notAssessed(
      "NO_IMAGE",
      `${inst.node} ${inst.label}: no image for ${inst.profile} (containers: in the config or the inventory)`,
    );
  if (p.imageProblem) broken("IMAGE_UNREADABLE", `${inst.node} ${inst.label}: ${p.imageProblem}`);
  const driverCuda = run.nodes.find((n) => n.name === inst.node)?.cuda ?? null;
  current().figures({ image: p.image, imageCuda: p.imageCuda, driverCuda });
  if (p.tooNew) {
    current().figures({ forwardCompat: false });
    fail("IMAGE_CUDA_TOO_NEW", `${inst.node} ${inst.label}: ${p.tooNew}`);
  }
  // Too new, yet it runs: through the compat libcuda the toolkit mounts (reported, not hidden).
  if (p.forwardCompat)
    current().figures({
      forwardCompat: true,
      compatLibcuda: p.forwardCompat.libcuda,
      compatDriver: p.forwardCompat.driver,
    });
  return p;
}

async function stressOf(inst: SuiteInstance): Promise<WorkloadResult> {
  const plan = await planOf(inst.node);
  const why = whyNotRun(plan, inst);
  if (!batch || why)
    notAssessed(
      "CONTAINER_NOT_STARTED",
      `${inst.node} ${inst.label}: not run: ${why ?? "no container ran"}`,
    );
  return batch.result(inst);
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** Why a node's containers are not assessed: its runtime's configuration, else no runtime. */
const problemCode = (plan: NodePlan) =>
  plan.runtimeConfig?.status === "not-configured"
    ? "RUNTIME_NOT_CONFIGURED"
    : "CONTAINER_RUNTIME_MISSING";

/** The node's runtime judged: failed where it cannot give a GPU, with the fix; never passed
 * where it was not read. */
async function runtimeCheck(node: string): Promise<void> {
  const plan = await planOf(node);
  const v = plan.runtimeConfig;
  if (!v) notAssessed("CONTAINER_RUNTIME_MISSING", plan.problem ?? `${node}: no runtime read`);
  current().figures({ runtime: v.runtime, paths: v.paths.join(", ") || null });
  if (v.status === "not-configured") fail("RUNTIME_NOT_CONFIGURED", `${node}: ${v.message}`);
  if (v.status === "unread") broken("RUNTIME_UNREAD", `${node}: ${v.message}`);
  if (v.status !== "ok") notAssessed("RUNTIME_UNJUDGED", `${node}: ${v.message}`);
  current().note(v.message);
}

describe("containers", () => {
  before(async () => {
    plans.start();
    const got = await Promise.all(run.nodes.map((n) => plans.result(n).catch(() => null)));
    run.nodes.forEach((n, k) => {
      const p = got[k];
      if (p) byNode.set(n.name, p);
    });
    const instances = run.nodes.flatMap((n) => {
      const p = byNode.get(n.name);
      return p && !p.problem ? n.instances.filter((i) => runnable(p, i)) : [];
    });
    if (instances.length === 0) return;
    batch = run.workload("stress", {
      instances,
      wrap: (inst, program, args) => wrapOf(byNode.get(inst.node)!)(inst, program, args),
    });
    batch.start();
  });
  // enroot's containers removed, also after failed tests and an interrupt (a node whose
  // inventory names enroot has its own check of it below, which removes them first).
  after(async () => {
    const done = await Promise.all(run.nodes.map((n) => ledger.removeAll(n)));
    for (const r of done) if (r.left) process.stderr.write(`slicecheck: ${r.left}\n`);
  });
  forEachNode(run.nodes, (node) => {
    it("its container runtime can give containers a GPU", () => runtimeCheck(node.name));
    if (node.instances.length === 0)
      it("has an instance to run a container on", () =>
        brokenIf(node.error ?? `${node.name}: no MIG instance and no GPU without MIG`));
    forEachGpu(node, (gpu) => {
      forEachInstance(gpu, (inst) => {
        it("starts its container, which sees exactly its instance", async () => {
          const p = await entryOf(inst);
          const check = current();
          const c = p.container!;
          check.parameter("image", p.image!);
          check.figures({
            image: p.image,
            imageCuda: p.imageCuda,
            containerStartS: round(c.seconds),
            bareStartS: p.bare ? round(p.bare.seconds) : null,
            containerOverheadS: p.bare ? round(c.seconds - p.bare.seconds) : null,
            ...(p.enroot
              ? { enrootCreateS: p.enroot.createS, enrootContainer: p.enroot.name }
              : {}),
          });
          check.evidence("nvidia-smi -L in the container", `${c.stdout}${c.stderr}`);
          if (c.exitCode !== 0)
            fail(
              "CONTAINER_START",
              `${node.name} ${inst.label}: ${p.image} did not start (exit ${c.exitCode}): ${c.stderr.trim()}`,
            );
          const inside = containers.cudaInside(c.stdout);
          check.figures({ cudaInside: inside });
          let others: string | null;
          try {
            others = containers.seesOthers(c.stdout, inst.uuid, inst.gpuUuid);
          } catch (e) {
            return broken(
              "CONTAINER_UNDECIDED",
              `${node.name} ${inst.label}: its nvidia-smi -L cannot be read: ${e instanceof Error ? e.message : String(e)}`,
            );
          }
          if (others)
            fail(
              "CONTAINER_SEES_OTHERS",
              `${node.name} ${inst.label} (${inst.profile}) in ${p.image}: ${others}`,
            );
          // One note (a later one replaces it): the forward compatibility it runs through included.
          const compat = p.forwardCompat ? `; ${p.forwardCompat.message}` : "";
          check.note(`${p.image}: CUDA ${inside ?? "?"} inside, sees only ${inst.uuid}${compat}`);
        });
        it("computes in its container without errors for the whole duration, at its share of the GPU", async () => {
          const r = await stressOf(inst);
          const check = current();
          workloadFigures(check, r);
          check.phase("stress in container", r.startMs, r.stopMs, r.status);
          if (r.status === "broken") brokenIf(`${inst.label}: ${r.reason}`, "WORKLOAD_UNDECIDED");
          if (r.status === "failed")
            fail(
              "STRESS_FAILED",
              `${node.name} ${inst.label} (${inst.profile}) in its container: ${r.reason}`,
            );
          // What the stress itself opened: the container's CUDA must have given it this instance.
          const opened = containers.openedDevice(readLog(r.log));
          if (opened !== null && opened !== inst.uuid)
            fail(
              "CONTAINER_SEES_OTHERS",
              `${node.name} ${inst.label}: the stress in its container ran on ${opened}, not on ${inst.uuid}`,
            );
          const others: WorkloadResult[] = [];
          for (const o of gpu.instances)
            if (o.uuid !== inst.uuid && batch && runnable(byNode.get(o.node)!, o))
              others.push(await batch.result(o));
          judgeShare(check, node.name, inst, r, others, run.options.tolerance);
        });
      });
      if (gpu.instances.length > 1)
        it("runs its instances' containers at the same time, whatever their CUDA versions", async () => {
          const plan = await planOf(node.name);
          if (plan.problem) notAssessed(problemCode(plan), plan.problem);
          const ran = gpu.instances.filter((i) => batch && runnable(plan, i));
          if (ran.length < 2)
            notAssessed(
              "CONTAINER_NOT_STARTED",
              `${node.name} GPU ${gpu.index}: fewer than two of its containers ran`,
            );
          const rs = await Promise.all(ran.map((i) => batch!.result(i)));
          const cudas = [...new Set(ran.map((i) => plan.instances.get(i.uuid)?.imageCuda ?? "?"))];
          const overlap =
            Math.min(...rs.map((r) => r.stopMs)) - Math.max(...rs.map((r) => r.startMs));
          current().figures({
            containers: ran.length,
            cudaVersions: cudas.join(", "),
            overlapS: round(overlap / 1000),
          });
          const bad = rs.filter((r) => r.status !== "passed");
          if (bad.length)
            fail(
              "STRESS_FAILED",
              `${node.name} GPU ${gpu.index}: ${bad.map((r) => `${r.instance.label}: ${r.reason}`).join("; ")}`,
            );
          if (overlap <= 0)
            broken(
              "CONTAINER_NOT_CONCURRENT",
              `${node.name} GPU ${gpu.index}: its containers did not run at the same time`,
            );
          current().note(
            `${ran.length} containers (CUDA ${cudas.join(", ")}) ran side by side for ${(overlap / 1000).toFixed(1)} s`,
          );
        });
    });
    // In a suite of its own: mocha runs a suite's own tests before its child suites (the GPUs').
    if (node.containers?.runtime === "enroot")
      describe("enroot", () => {
        it("removes the run's enroot containers", async () => {
          const r = await ledger.removeAll(node);
          if (r.created === 0)
            notAssessed("CONTAINER_NOT_STARTED", `${node.name}: no enroot container was created`);
          if (r.left) fail("CONTAINER_LEFT", r.left);
          current().figures({ enrootContainersRemoved: r.created });
          current().note(`${r.created} enroot container(s) of the run removed (enroot list)`);
        });
      });
  });
});

function readLog(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
