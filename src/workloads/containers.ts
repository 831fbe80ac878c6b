// Containers per MIG instance (issue 23), the pure part: which image an instance runs, how the
// node's runtime is told to give a container exactly that instance, what an image's CUDA is,
// whether the driver can run it, and what a container saw of the GPUs. The containers suite
// (suites/containers.ts) does the I/O around these.
//
// How the instance is given (NVIDIA Container Toolkit docs): podman through CDI, the device
// named `nvidia.com/gpu=<gpu index>:<MIG device index>` as `nvidia-ctk cdi generate` names MIG
// devices (index strategy, the default); docker through its `--gpus device=<MIG UUID>` path
// (the nvidia runtime hook), which every docker with the toolkit has. enroot takes the device
// from NVIDIA_VISIBLE_DEVICES (its nvidia hook).
import { parseGpus } from "../nvsmi/gpus.js";
import { quote, quoteArgv } from "../util/shell.js";
import { startArgv } from "./enroot.js";
import type { Instance } from "./instances.js";
import type { WorkloadSpec } from "./specs.js";

export type ContainerRuntime = "docker" | "podman" | "enroot";
/** Looked for in this order when the inventory names none. */
export const RUNTIMES: readonly ContainerRuntime[] = ["podman", "docker", "enroot"];

/** The image of an instance: its own (`gpuN:START:SIZE`) first, else its profile's; the
 * node's inventory entries win over the config file's, key by key. */
export function imageFor(
  inst: Pick<Instance, "gpu" | "placement" | "profile">,
  config: Readonly<Record<string, string>>,
  node: Readonly<Record<string, string>>,
): string | null {
  const images = { ...config, ...node };
  const own = inst.placement === null ? undefined : images[`gpu${inst.gpu}:${inst.placement}`];
  // A compute-instance profile (`1c.3g.40gb`) runs its GPU instance's image.
  const gi = inst.profile.replace(/^\d+c\./, "");
  return own ?? images[inst.profile] ?? images[gi] ?? null;
}

/** The first runtime of RUNTIMES in `found` (the programs `command -v` found), or null. */
export function pickRuntime(found: readonly string[]): ContainerRuntime | null {
  return RUNTIMES.find((r) => found.includes(r)) ?? null;
}

/** `podman run …` giving the container the instance only: CDI name for podman, MIG UUID for
 * docker's --gpus, NVIDIA_VISIBLE_DEVICES for enroot. `cdiIndex` is the instance's MIG device
 * index on its GPU as `nvidia-smi -L` numbers it. */
export function runArgv(
  runtime: ContainerRuntime,
  inst: Pick<Instance, "gpu" | "uuid">,
  cdiIndex: number | null,
  image: string,
  command: readonly string[],
  /** Host folders the command needs (the built-in workload's), mounted read-only in place. */
  mounts: readonly string[] = [],
): string[] {
  const vols = mounts.flatMap((m) => ["-v", `${m}:${m}:ro`]);
  switch (runtime) {
    case "podman": {
      const dev = cdiIndex === null ? inst.uuid : `${inst.gpu}:${cdiIndex}`;
      return [
        "podman",
        "run",
        "--rm",
        "--device",
        `nvidia.com/gpu=${dev}`,
        ...vols,
        image,
        ...command,
      ];
    }
    case "docker":
      return ["docker", "run", "--rm", "--gpus", `device=${inst.uuid}`, ...vols, image, ...command];
    case "enroot":
      // `image` is the container `enroot create` made of the image (./enroot.ts).
      return startArgv(image, inst.uuid, command, mounts);
  }
}

/** The instance's MIG device index on its GPU in a host `nvidia-smi -L` (CDI's `G:M`). */
export function migIndexOf(listing: string, inst: Pick<Instance, "gpu" | "uuid">): number | null {
  const gpu = parseGpus(listing).gpus.find((g) => g.index === inst.gpu);
  return gpu?.migDevices.find((d) => d.uuid === inst.uuid)?.index ?? null;
}

/** An image's CUDA from `image inspect` (docker's and podman's JSON): its CUDA_VERSION env, as
 * the nvidia/cuda images set it (`12.4.1`); null when it has none (not a CUDA image). */
export function imageCudaOf(inspectJson: string): string | null {
  let data: unknown;
  try {
    data = JSON.parse(inspectJson);
  } catch {
    return null;
  }
  const first = Array.isArray(data) ? data[0] : data;
  const env = (first as { Config?: { Env?: unknown } } | undefined)?.Config?.Env;
  if (!Array.isArray(env)) return null;
  const line = env.find((e): e is string => typeof e === "string" && e.startsWith("CUDA_VERSION="));
  return line ? line.slice("CUDA_VERSION=".length) : null;
}

/** The MIG and GPU UUIDs a container listed with `nvidia-smi -L` inside. */
export function seenDevices(listing: string): { gpus: string[]; migs: string[] } {
  // The probe's own CUDA_VERSION= line is not part of nvidia-smi's listing.
  const r = parseGpus(listing.replace(/^CUDA_VERSION=.*(?:\n|$)/m, ""));
  return {
    gpus: r.gpus.map((g) => g.uuid),
    migs: r.gpus.flatMap((g) => g.migDevices.map((d) => d.uuid)),
  };
}

/** What is wrong with a container's view of the GPUs, given the one instance it was given;
 * null when it saw that instance and nothing else. */
export function seesOthers(listing: string, mine: string, gpuUuid: string): string | null {
  const seen = seenDevices(listing);
  const others = seen.migs.filter((u) => u !== mine);
  if (others.length > 0)
    return seen.migs.includes(mine)
      ? `it sees ${seen.migs.length} MIG devices (${others.join(", ")} besides its own)`
      : `it sees ${others.join(", ")} and not its own instance ${mine}`;
  const gpus = seen.gpus.filter((u) => u !== gpuUuid);
  if (gpus.length > 0) return `it sees other GPUs (${gpus.join(", ")})`;
  if (!seen.migs.includes(mine)) return `its own instance ${mine} is not in its nvidia-smi -L`;
  return null;
}

/** The device a built-in workload opened (its `slicecheck-device … uuid=` header line). */
export function openedDevice(log: string): string | null {
  return /^slicecheck-device .*?\buuid=(\S+)/m.exec(log)?.[1] ?? null;
}

/** The `CUDA_VERSION=` line a probe printed inside the container. */
export function cudaInside(stdout: string): string | null {
  return /^CUDA_VERSION=(\S+)$/m.exec(stdout)?.[1] ?? null;
}

/** The line a containerised workload prints first, from inside its container (the image's own
 * CUDA_VERSION, the devices the runtime gave it): proof that what follows ran in there. */
export const CONTAINER_LINE = "slicecheck-container";

/**
 * `spec` run in a container of `image` on its instance, through `runtime` (else the first of
 * podman and docker on the node's PATH), as runArgv starts the containers suite's: the isolation
 * suite's aggressor (`containers: {aggressor: IMAGE}`). A shell on the node resolves the
 * program's path (a built-in on the PATH or in the build cache) and mounts its folder read-only;
 * the run's and command's tags (SLICECHECK_RUN, SLICECHECK_CMD) go into the container's
 * environment so that the node's kill-by-tag reaches the process inside, which runc does not
 * put in the caller's process group; TERM at a deadline reaches it through the runtime's signal
 * proxy (`run` attached, --sig-proxy on by default). Inside, CONTAINER_LINE first, then the
 * program itself (exec: its exit status and signals are the container's, and the runtime's).
 */
export function containerizedSpec(
  spec: WorkloadSpec,
  inst: Pick<Instance, "gpu" | "uuid">,
  image: string,
  runtime: ContainerRuntime | null,
): WorkloadSpec {
  const branch = (rt: "podman" | "docker") => {
    const inner = `echo "${CONTAINER_LINE} runtime=${rt} image=${image} cuda=\${CUDA_VERSION:-none} devices=\${NVIDIA_VISIBLE_DEVICES:-none}"; exec "$@"`;
    // The MIG UUID as the CDI name: `nvidia-ctk cdi generate` names each MIG device by it too.
    const [cli, sub, ...rest] = runArgv(rt, inst, null, image, ["sh", "-c", inner, "sh"]);
    const tags = '-e "SLICECHECK_RUN=$SLICECHECK_RUN" -e "SLICECHECK_CMD=$SLICECHECK_CMD"';
    return `${rt}) exec ${quoteArgv([cli!, sub!])} ${tags} \${m:+-v "$m:$m:ro"} ${quoteArgv(rest)} "$p" "$@";;`;
  };
  const pick = runtime
    ? `rt=${quote(runtime)}`
    : 'rt=; for r in podman docker; do command -v "$r" >/dev/null 2>&1 && { rt=$r; break; }; done';
  const script = [
    'p=$(command -v "$1" 2>/dev/null) || p=$1; shift',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's ${…}, expanded on the node
    "m=; case $p in /*) m=${p%/*};; esac",
    pick,
    'case "$rt" in',
    branch("podman"),
    branch("docker"),
    `*) echo "slicecheck: no container runtime (podman, docker) to run the aggressor in \${rt:+($rt is not driven)}" >&2; exit 125;;`,
    "esac",
  ].join("\n");
  return {
    ...spec,
    program: "sh",
    args: ["-c", script, "slicecheck-container", spec.program, ...spec.args],
  };
}
export * from "./compat.js";
