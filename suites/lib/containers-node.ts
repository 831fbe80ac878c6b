// The containers suite's work on one node before any workload: which runtime, which image each
// instance runs and its CUDA (from `image inspect`; under enroot from inside the container made
// of it: ./containers-enroot.ts), the images the driver cannot run refused
// before any container starts, then per instance one probe container (its CUDA and its
// `nvidia-smi -L`) timed against the same probe started bare.
import { dirname } from "node:path";
import {
  containers,
  judgeImageCuda,
  type RuntimeConfigVerdict,
  readRuntimeConfig,
  type SuiteInstance,
  type SuiteNode,
  type SuiteRun,
} from "slicecheck/suite";
import { type EnrootLedger, enrootImages } from "./containers-enroot.js";

type Runtime = containers.ContainerRuntime;

/** The image judged against the driver (the toolkit's own rule, judgeImageCuda): why it cannot
 * run (IMAGE_CUDA_TOO_NEW's message), the forward-compatibility libraries it runs through, or
 * why that could not be told (an unread compat folder is never taken for one that has them). */
export function judged(
  image: string,
  read: ImageRead | undefined,
  node: Pick<SuiteNode, "cuda" | "driver">,
): { tooNew: string | null; forwardCompat: ForwardCompat | null; problem: string | null } {
  const none = { tooNew: null, forwardCompat: null, problem: read?.problem ?? null };
  const cuda = read?.cuda ?? null;
  const plain = judgeImageCuda(node.cuda, cuda, false);
  if (!read || read.problem || plain.verdict !== "refused") return none;
  if (!read.compat)
    return {
      ...none,
      problem: `image ${image}: ${plain.message.split(":")[0]}, and whether it carries the forward-compatibility libraries could not be read: ${read.compatProblem ?? "no listing"}`,
    };
  const used = containers.compatUsed(read.compat, node.driver);
  if ("why" in used) {
    const cut = plain.message.indexOf(": ");
    const [head, rest] = [plain.message.slice(0, cut), plain.message.slice(cut + 2)];
    return {
      ...none,
      tooNew: `image ${image}: ${head}, and ${used.why}: ${rest}; no container of it was given a GPU`,
    };
  }
  const v = judgeImageCuda(node.cuda, cuda, true);
  return { ...none, forwardCompat: { ...used, message: v.message } };
}

/** The forward-compatibility libcuda an image too new for the driver runs through. */
export interface ForwardCompat {
  libcuda: string;
  /** The driver version of that libcuda (`580.65.06`). */
  driver: string;
  message: string;
}

export interface Probe {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** Seconds from the request to its answer, on this machine's clock (SSH included). */
  seconds: number;
}

export interface InstancePlan {
  image: string | null;
  /** The image's CUDA_VERSION; null when unknown (not a CUDA image, or inspect failed). */
  imageCuda: string | null;
  /** Why no container may start for it (IMAGE_CUDA_TOO_NEW's message), or null. */
  tooNew: string | null;
  /** Why the image could not be read on the node, or null. */
  imageProblem: string | null;
  /** Too new for the driver, but it carries forward-compatibility libraries the toolkit uses. */
  forwardCompat: ForwardCompat | null;
  cdiIndex: number | null;
  /** enroot: the container `enroot create` made of the image, and how long that took. */
  enroot: { name: string; createS: number | null } | null;
  container: Probe | null;
  bare: Probe | null;
}

export interface NodePlan {
  runtime: Runtime | null;
  /** Why nothing can run in containers here (no runtime…); null when planned. */
  problem: string | null;
  /** Whether the runtime can give containers a GPU (its nvidia runtime, its CDI specs); null
   * where no runtime was found to ask. */
  runtimeConfig: RuntimeConfigVerdict | null;
  instances: Map<string, InstancePlan>;
  /** The built-in stress on the node (mounted into each container). */
  program: string | null;
}

/** The probe: the image's CUDA as the container sees it, and the devices it can list. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's ${…}, expanded in the container
export const PROBE = ["sh", "-c", 'echo "CUDA_VERSION=${CUDA_VERSION:-none}"; nvidia-smi -L'];

async function timed(
  node: SuiteNode,
  argv: string[],
  env?: Record<string, string>,
): Promise<Probe> {
  const t0 = Date.now();
  const r = await node.exec(argv, { timeoutS: 120, ...(env ? { env } : {}) });
  return { ...r, seconds: (Date.now() - t0) / 1000 };
}

/** The inventory's runtime, else the first on the node's PATH. */
async function runtimeOf(
  node: SuiteNode,
): Promise<{ runtime: Runtime | null; problem: string | null }> {
  const named = node.containers?.runtime ?? null;
  const look = named ? [named] : containers.RUNTIMES;
  const r = await node.exec({
    shell: look.map((n) => `command -v ${n} >/dev/null 2>&1 && echo ${n}`).join("; "),
  });
  const found = r.stdout.split("\n").filter(Boolean);
  const runtime = containers.pickRuntime(found);
  if (!runtime)
    return {
      runtime: null,
      problem: named
        ? `${node.name}: the inventory's container_runtime ${named} is not on the node's PATH`
        : `${node.name}: no container runtime (${containers.RUNTIMES.join(", ")}) on the node's PATH`,
    };
  return { runtime, problem: null };
}

export interface ImageRead {
  cuda: string | null;
  problem: string | null;
  /** enroot's container of the image. */
  container?: string | null;
  createS?: number | null;
  /** Its forward-compatibility libraries; null where not read (or the read failed: why). */
  compat: containers.CompatRead | null;
  compatProblem?: string | null;
}

/** Each distinct image's CUDA, or why it could not be read; for an image newer than the
 * driver's, what its compat folder holds (one GPU-less container: only then, not for every
 * image, so the common case starts nothing more). */
async function imageCudas(node: SuiteNode, runtime: "docker" | "podman", images: Set<string>) {
  const out = new Map<string, ImageRead>();
  for (const image of images) {
    const r = await node.exec([runtime, "image", "inspect", image]);
    if (r.exitCode !== 0) {
      const why = r.stderr.trim() || `exit ${r.exitCode}`;
      out.set(image, {
        cuda: null,
        compat: null,
        problem: `${runtime} image inspect ${image}: ${why}`,
      });
      continue;
    }
    const cuda = containers.imageCudaOf(r.stdout);
    const read: ImageRead = { cuda, problem: null, compat: null };
    if (judgeImageCuda(node.cuda, cuda, false).verdict === "refused") {
      const c = await node.exec(containers.compatArgv(runtime, image), { timeoutS: 120 });
      read.compat = c.exitCode === 0 ? containers.compatOf(c.stdout) : null;
      if (!read.compat)
        read.compatProblem = `${runtime} run --rm --entrypoint /bin/sh ${image} (listing ${containers.COMPAT_DIR}): ${c.stderr.trim() || `exit ${c.exitCode}, no listing`}`;
    }
    out.set(image, read);
  }
  return out;
}

export async function planNode(
  run: SuiteRun,
  node: SuiteNode,
  ledger: EnrootLedger,
): Promise<NodePlan> {
  const plan: NodePlan = {
    runtime: null,
    problem: null,
    runtimeConfig: null,
    instances: new Map(),
    program: null,
  };
  if (node.error) return { ...plan, problem: node.error };
  const rt = await runtimeOf(node);
  if (!rt.runtime || rt.problem) return { ...plan, ...rt };
  const runtime = rt.runtime;
  // Before any image is read or container started: a runtime that cannot give a GPU would
  // fail every container for a reason that is the node's configuration, not the instance's.
  plan.runtimeConfig = await readRuntimeConfig((shell) => node.exec({ shell }), runtime);
  if (plan.runtimeConfig.status === "not-configured")
    return { ...plan, runtime, problem: `${node.name}: ${plan.runtimeConfig.message}` };
  const chosen = new Map<string, string | null>();
  for (const inst of node.instances)
    chosen.set(
      inst.uuid,
      containers.imageFor(inst, run.options.containers ?? {}, node.containers?.images ?? {}),
    );
  const images = new Set([...chosen.values()].filter((x): x is string => x !== null));
  if (images.size === 0)
    return {
      ...plan,
      runtime,
      problem: `${node.name}: no image for any instance; name one per profile under containers: in slicecheck.config.yaml or the inventory`,
    };
  const cudas: Map<string, ImageRead> =
    runtime === "enroot"
      ? await enrootImages(node, ledger, images)
      : await imageCudas(node, runtime, images);
  // Every image judged against the driver before any container starts.
  for (const inst of node.instances) {
    const image = chosen.get(inst.uuid) ?? null;
    const c = image ? cudas.get(image) : undefined;
    const j = image ? judged(image, c, node) : null;
    plan.instances.set(inst.uuid, {
      image,
      imageCuda: c?.cuda ?? null,
      imageProblem: j?.problem ?? null,
      tooNew: j?.tooNew ?? null,
      forwardCompat: j?.forwardCompat ?? null,
      cdiIndex: null,
      enroot: c?.container ? { name: c.container, createS: c.createS ?? null } : null,
      container: null,
      bare: null,
    });
  }
  const listing = await node.exec(["nvidia-smi", "-L"]);
  for (const inst of node.instances) {
    const p = plan.instances.get(inst.uuid)!;
    if (!p.image || p.tooNew || p.imageProblem) continue;
    p.cdiIndex = containers.migIndexOf(listing.stdout, inst);
    p.bare = await timed(node, PROBE, { CUDA_VISIBLE_DEVICES: inst.uuid });
    const target = p.enroot?.name ?? p.image;
    p.container = await timed(node, containers.runArgv(runtime, inst, p.cdiIndex, target, PROBE));
  }
  plan.program = await run.program(node, "stress");
  return { ...plan, runtime };
}

/** Why the stress does not run in the instance's container (its image refused, its probe
 * container failed or saw other devices), or null: it runs. */
export function whyNotRun(plan: NodePlan, inst: SuiteInstance): string | null {
  if (plan.problem) return plan.problem;
  const p = plan.instances.get(inst.uuid);
  if (!p?.image) return "no image for its profile";
  if (p.tooNew)
    return `its image was refused before any container of it was given a GPU (${p.image}, CUDA ${p.imageCuda})`;
  if (p.imageProblem) return p.imageProblem;
  if (p.container?.exitCode !== 0) return "its probe container did not start";
  try {
    const others = containers.seesOthers(p.container.stdout, inst.uuid, inst.gpuUuid);
    return others ? `its probe container saw other devices: ${others}` : null;
  } catch {
    // An unreadable listing: its own check is broken, and nothing runs in that container.
    return "its probe container's nvidia-smi -L could not be read";
  }
}

/** The instances whose container started and saw only its instance: they run the stress. */
export const runnable = (plan: NodePlan, inst: SuiteInstance): boolean =>
  whyNotRun(plan, inst) === null;

/** The argv of the stress in the instance's container (the program's folder mounted). */
export function wrapOf(plan: NodePlan) {
  return (inst: SuiteInstance, program: string, args: readonly string[]): string[] => {
    const p = plan.instances.get(inst.uuid);
    return containers.runArgv(
      plan.runtime!,
      inst,
      p?.cdiIndex ?? null,
      p?.enroot?.name ?? p?.image ?? "",
      [program, ...args],
      program.startsWith("/") ? [dirname(program)] : [],
    );
  };
}
