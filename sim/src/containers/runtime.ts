// The simulated container runtime (podman and docker, the CLI subset the containers suite and
// a site's scripts use): `run --rm --device nvidia.com/gpu=G:M | --gpus device=UUID [-e K=V]
// [-v A:B] IMAGE CMD…`, `image inspect IMAGE`, `images`, `--version`. No real container is made
// (this machine's checks on rootful podman are in the README): the command runs as a process
// of the node with a container's environment (the image's env, no CUDA_VISIBLE_DEVICES from
// outside) and fenced to the devices it was given (../fence.ts), so its CUDA and its
// `nvidia-smi -L` see only them. What the toolkit's hook checks before the start is modelled:
// the image's NVIDIA_REQUIRE_CUDA against the driver (./require.ts), for a container given a GPU.
import { spawn } from "node:child_process";
import { FENCE_VAR } from "../fence.js";
import { readState } from "../nvsmi/state.js";
import { allDevices, resolveDevice } from "./devices.js";
import {
  imageRoot,
  inspectOf,
  isSqsh,
  readContainers,
  recordStart,
  requirementOf,
  type SimImage,
} from "./images.js";
import { requirementError, unsatisfied } from "./require.js";

export type Flavor = "podman" | "docker";

/** Seconds a container takes to start before its command runs. The references hold no
 * measurement; 0.5 s is a conservative figure for a local image with crun/runc and the
 * toolkit's hook (commonly quoted as a few hundred ms to about a second). */
export const START_COST_S = 0.5;

const VERSION: Record<Flavor, string> = {
  podman: "podman version 4.9.3",
  docker: "Docker version 26.1.5+dfsg1, build a72d7cd",
};

interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
}

export async function runtimeMain(flavor: Flavor, argv: string[], io: Io): Promise<number> {
  const stateDir = process.env.SLICECHECK_SIM_STATE;
  if (!stateDir) {
    io.err(`${flavor} (simulated): SLICECHECK_SIM_STATE is not set\n`);
    return 125;
  }
  const [sub, ...rest] = argv;
  if (sub === "--version" || sub === "version") {
    io.out(`${VERSION[flavor]}\n`);
    return 0;
  }
  // enroot's squashfs images are files for enroot, not images podman or docker know.
  const images = readContainers(stateDir).images.filter((i) => !isSqsh(i));
  if (sub === "images") {
    io.out("REPOSITORY                 TAG                      IMAGE ID\n");
    for (const i of images) {
      const [repo, tag] = i.name.split(/:(?=[^:]*$)/);
      io.out(`${(repo ?? "").padEnd(26)} ${(tag ?? "latest").padEnd(24)} ${imageId(i)}\n`);
    }
    return 0;
  }
  if (sub === "image" && rest[0] === "inspect") return inspect(images, rest.slice(1), io);
  if (sub === "info" && flavor === "docker") return dockerInfo(stateDir, rest, io);
  if (sub === "run") return run(flavor, stateDir, rest, io);
  io.err(`Error: ${flavor} (simulated) knows run, image inspect, images, info and --version\n`);
  return 125;
}

/**
 * `docker info --format '{{json .Runtimes}}'` and `'{{json .CDISpecDirs}}'`, the two fields the
 * runtime check reads (Engine API SystemInfo): the nvidia runtime registered as
 * `nvidia-ctk runtime configure` leaves it, unless `runtime-unconfigured`; CDI off, as on a
 * docker 26 without `"features": {"cdi": true}` (an empty list).
 */
function dockerInfo(stateDir: string, args: string[], io: Io): number {
  const format =
    args[0] === "--format" || args[0] === "-f" ? args[1] : args[0]?.replace(/^--format=/, "");
  const { unconfigured } = readContainers(stateDir);
  const runtimes: Record<string, { path: string }> = {
    "io.containerd.runc.v2": { path: "runc" },
    ...(unconfigured ? {} : { nvidia: { path: "nvidia-container-runtime" } }),
    runc: { path: "runc" },
  };
  if (format === "{{json .Runtimes}}") io.out(`${JSON.stringify(runtimes)}\n`);
  else if (format === "{{json .CDISpecDirs}}") io.out("[]\n");
  else {
    io.err(
      "Error: docker info (simulated) answers --format '{{json .Runtimes}}' and '{{json .CDISpecDirs}}'\n",
    );
    return 1;
  }
  return 0;
}

const imageId = (i: SimImage) => (inspectOf(i) as { Id: string }).Id.slice(7, 19);

function inspect(images: readonly SimImage[], names: string[], io: Io): number {
  const found = names.map((n) => images.find((i) => i.name === n));
  const missing = names.find((_, k) => !found[k]);
  if (missing !== undefined || names.length === 0) {
    io.out("[]\n");
    io.err(`Error: ${missing ?? "an image"}: image not known\n`);
    return 125;
  }
  io.out(
    `${JSON.stringify(
      found.map((i) => inspectOf(i!)),
      null,
      4,
    )}\n`,
  );
  return 0;
}

export interface RunArgs {
  devices: string[];
  /** --entrypoint: run it with the command as its arguments (the image's own is bypassed). */
  entrypoint?: string;
  env: Record<string, string>;
  image: string;
  command: string[];
}

const VALUE_FLAGS = new Set([
  "--device",
  "--gpus",
  "-e",
  "--env",
  "-v",
  "--volume",
  "--name",
  "--entrypoint",
]);
const VALUE_IGNORED = new Set(["--security-opt", "--network", "--hooks-dir", "-w", "--workdir"]);

function parseRun(flavor: Flavor, args: string[]): RunArgs | string {
  const r: RunArgs = { devices: [], env: {}, image: "", command: [] };
  let k = 0;
  while (k < args.length) {
    const a = args[k]!;
    if (!a.startsWith("-")) break;
    k++;
    if (a === "--rm" || a === "-i" || a === "-t" || a === "--init") continue;
    const [flag, inline] = a.includes("=")
      ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]
      : [a, undefined];
    if (!VALUE_FLAGS.has(flag!) && !VALUE_IGNORED.has(flag!)) return `unknown flag: ${a}`;
    const v = inline ?? args[k++];
    if (v === undefined) return `flag needs an argument: ${flag}`;
    if (flag === "--device") {
      if (!v.startsWith("nvidia.com/gpu="))
        return `only CDI devices nvidia.com/gpu=… are simulated, got ${v}`;
      r.devices.push(v.slice("nvidia.com/gpu=".length));
    } else if (flag === "--gpus") {
      if (flavor !== "docker") return "unknown flag: --gpus";
      const list =
        v === "all"
          ? ["all"]
          : v
              .replace(/^"?device=/, "")
              .replace(/"$/, "")
              .split(",");
      r.devices.push(...list);
    } else if (flag === "--entrypoint") {
      r.entrypoint = v;
    } else if (flag === "-e" || flag === "--env") {
      const eq = v.indexOf("=");
      if (eq > 0) r.env[v.slice(0, eq)] = v.slice(eq + 1);
    }
  }
  r.image = args[k] ?? "";
  r.command = r.entrypoint ? [r.entrypoint, ...args.slice(k + 1)] : args.slice(k + 1);
  if (!r.image) return `"${flavor} run" requires at least 1 argument`;
  return r;
}

/** What the requirement is checked against: every simulated board is a data-center one, whose
 * brand NVML reports as `nvidia` (forward compatibility's precondition holds on all of them). */
export const SIM_FACTS = (state: { cuda: string; driver: string }) => ({
  cuda: state.cuda,
  driver: state.driver,
  brand: "nvidia",
});

async function run(flavor: Flavor, stateDir: string, args: string[], io: Io): Promise<number> {
  const parsed = parseRun(flavor, args);
  if (typeof parsed === "string") {
    io.err(`Error: ${parsed}\n`);
    return 125;
  }
  const { images, seesAll, unconfigured } = readContainers(stateDir);
  const state = readState(stateDir);
  const image = images.find((i) => i.name === parsed.image && !isSqsh(i));
  const refuse = (reason: string, code: number) => {
    recordStart(stateDir, {
      runtime: flavor,
      image: parsed.image,
      devices: parsed.devices,
      outcome: "refused",
      reason,
      atMs: Date.now(),
    });
    io.err(`Error: ${reason}\n`);
    return code;
  };
  if (!image)
    return refuse(`${parsed.image}: image not known locally and no registry is reachable`, 125);
  // Not configured for the toolkit: docker has no device driver for --gpus, podman no CDI spec.
  if (unconfigured && parsed.devices.length > 0)
    return refuse(
      flavor === "podman"
        ? `setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=${parsed.devices[0]}`
        : 'could not select device driver "" with capabilities: [[gpu]]',
      125,
    );
  const fence: string[] = [];
  for (const d of parsed.devices) {
    const hit = resolveDevice(state, d);
    if (!hit)
      return refuse(
        flavor === "podman"
          ? `setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=${d}`
          : `failed to create task for container: nvidia-container-cli: device error: ${d}: unknown device`,
        125,
      );
    fence.push(...hit);
  }
  // The toolkit's hook checks NVIDIA_REQUIRE_CUDA against the driver before the command runs;
  // a container given no GPU has no hook (runc alone), so nothing is checked.
  const first =
    fence.length > 0
      ? unsatisfied(parsed.env.NVIDIA_REQUIRE_CUDA ?? requirementOf(image), SIM_FACTS(state))
      : null;
  if (first && !parsed.env.NVIDIA_DISABLE_REQUIRE)
    return refuse(`OCI runtime error: ${requirementError(first)}`, 126);
  await new Promise((r) => setTimeout(r, START_COST_S * 1000));
  const given = seesAll && fence.length > 0 ? allDevices(state) : fence;
  recordStart(stateDir, {
    runtime: flavor,
    image: image.name,
    devices: given,
    outcome: "started",
    atMs: Date.now(),
  });
  return exec(parsed, image, stateDir, given);
}

/** The command as a process of the node with the container's environment, fenced (enroot's
 * start too: ./enroot-start.ts). */
export function exec(
  r: RunArgs,
  image: SimImage,
  stateDir: string,
  fence: string[],
): Promise<number> {
  if (r.command.length === 0) return Promise.resolve(0);
  // The image's own files are modelled for /usr/local/cuda only (its version.json, its compat
  // folder): a path the command names there is read from the image's modelled root.
  const root = imageRoot(stateDir, image);
  const argv = r.command.map((a) => a.replaceAll("/usr/local/cuda/", `${root}/usr/local/cuda/`));
  const env: NodeJS.ProcessEnv = {
    // The node's PATH stands for the image's plus the toolkit's injected nvidia-smi.
    PATH: process.env.PATH,
    HOME: "/root",
    CUDA_VERSION: image.cuda,
    NVIDIA_VISIBLE_DEVICES: fence.join(","),
    SLICECHECK_SIM_STATE: stateDir,
    [FENCE_VAR]: fence.length ? fence.join(",") : "none",
    ...r.env,
  };
  const rooted = argv.some((a, k) => a !== r.command[k]);
  return new Promise((resolve) => {
    const out = rooted ? "pipe" : "inherit";
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ["inherit", out, "inherit"] });
    // What it prints of the image's modelled root shows the container's own paths.
    child.stdout?.on("data", (b) => process.stdout.write(String(b).replaceAll(root, "")));
    const forward = (sig: NodeJS.Signals) => () => child.kill(sig);
    process.on("SIGTERM", forward("SIGTERM"));
    process.on("SIGINT", forward("SIGINT"));
    child.on("error", (e) => {
      process.stderr.write(
        `Error: crun: executable file \`${r.command[0]}\` not found: ${e.message}\n`,
      );
      resolve(127);
    });
    // Piped: its last output read before the answer ("close" follows "exit" and the drain).
    child.on(rooted ? "close" : "exit", (code, sig) =>
      resolve(code ?? 128 + (sig === "SIGKILL" ? 9 : sig === "SIGINT" ? 2 : 15)),
    );
  });
}
