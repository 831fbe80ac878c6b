// The simulated node's container images (issue 23): named entries with the CUDA version their
// CUDA_VERSION env carries, as the nvidia/cuda images set it. Kept in <state>/containers.json
// with the toolkit's planted faults; absent, the node has the default set below, built locally
// (no registry is reachable from a simulated node, nor needed).
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { cudaForDriver } from "../nvsmi/state.js";

export const CONTAINERS_FILE = "containers.json";
/** One line per container start the runtime attempted (tests read it: "none started"). */
export const STARTS_FILE = "container-starts.jsonl";

export interface SimImage {
  name: string;
  /** `12.4.1`: the image's CUDA_VERSION. */
  cuda: string;
  /** The image carries NVIDIA's forward-compatibility libraries (cuda-compat-X-Y): the driver
   * version of the libcuda in its /usr/local/cuda/compat (`580.65.06`). Absent: none. */
  compat?: string;
}

export interface SimContainers {
  /** OCI images (podman, docker) and enroot's squashfs images (names ending .sqsh, absolute
   * paths on the node), each with its CUDA version. */
  images: SimImage[];
  /** enroot's containers (`enroot create`): name → the .sqsh it was made of. */
  enroot?: { name: string; image: string }[];
  /** `sim fault NODE container-sees-all`: the runtime gives every container every device. */
  seesAll?: boolean;
  /** `sim fault NODE runtime-unconfigured`: docker has no nvidia runtime (and CDI off), podman
   * reads its CDI specs from a folder that holds none (containers.conf, CONTAINERS_CONF_FILE). */
  unconfigured?: boolean;
}

/** The node's containers.conf (SLICECHECK_CONTAINERS_CONF, as the product reads it). */
export const CONTAINERS_CONF_FILE = "containers.conf";

export const DEFAULT_IMAGES: readonly SimImage[] = [
  { name: "nvidia/cuda:12.2.0-base-ubuntu22.04", cuda: "12.2.0" },
  { name: "nvidia/cuda:12.4.1-base-ubuntu22.04", cuda: "12.4.1" },
  { name: "nvidia/cuda:13.0.0-base-ubuntu24.04", cuda: "13.0.0" },
  // A site-built image's shape (no such tag is published): the nvidia/cuda 13.0 base plus
  // `apt-get install cuda-compat-13-0`, whose libcuda is the 13.0 release's driver, 580.65.06.
  { name: "nvidia/cuda:13.0.0-compat-ubuntu24.04", cuda: "13.0.0", compat: "580.65.06" },
  // The same images as `enroot import -o /opt/enroot/<name>.sqsh docker://…` leaves them
  // (import.md's default name is the URI with `/` and `:` as `+`).
  { name: "/opt/enroot/nvidia+cuda+12.2.0-base-ubuntu22.04.sqsh", cuda: "12.2.0" },
  { name: "/opt/enroot/nvidia+cuda+12.4.1-base-ubuntu22.04.sqsh", cuda: "12.4.1" },
  { name: "/opt/enroot/nvidia+cuda+13.0.0-base-ubuntu24.04.sqsh", cuda: "13.0.0" },
  {
    name: "/opt/enroot/nvidia+cuda+13.0.0-compat-ubuntu24.04.sqsh",
    cuda: "13.0.0",
    compat: "580.65.06",
  },
];

/** The driver branches cuda-compat supports that an image lists as alternatives to `cuda>=`
 * (data-center production branches; the shape nvidia/cuda images use, not NVIDIA's full list). */
const COMPAT_BRANCHES = [470, 535, 550, 570];

/** The compat libcuda's driver version for an image of CUDA `cuda` (`sim fault image …+compat`):
 * the first branch whose CUDA it is (sim/src/nvsmi/state.ts cudaForDriver), as `BRANCH.0.0`. */
export function compatDriverFor(cuda: string): string {
  const [ma, mi] = cuda.split(".");
  for (let b = 450; b <= 700; b += 5)
    if (cudaForDriver(`${b}.0.0`) === `${ma}.${mi}`) return `${b}.0.0`;
  return "999.0.0";
}

/** The NVIDIA_REQUIRE_CUDA the image carries: `cuda>=X.Y`, and with compat libraries the
 * data-center branches older than theirs, on which it starts anyway (./require.ts). */
export function requirementOf(img: SimImage): string {
  const [major, minor] = img.cuda.split(".");
  const own = Number(img.compat?.split(".")[0] ?? 0);
  const alt = COMPAT_BRANCHES.filter((b) => b < own).flatMap((b) =>
    ["tesla", "nvidia"].map((brand) => `brand=${brand},driver>=${b},driver<${b + 1}`),
  );
  return [`cuda>=${major}.${minor}`, ...alt].join(" ");
}

/** The image's files the simulated container reads (only /usr/local/cuda: its version.json and
 * its compat folder), made once under the node's state; ./runtime.ts exec points the command's
 * /usr/local/cuda/ paths there. */
export function imageRoot(stateDir: string, img: SimImage): string {
  const root = join(stateDir, "rootfs", img.name.replace(/[^A-Za-z0-9._-]/g, "_"));
  if (existsSync(root)) return root;
  // Made aside and renamed into place: containers of one image may start at the same time.
  const tmp = `${root}.${process.pid}`;
  const cuda = join(tmp, "usr/local/cuda");
  mkdirSync(join(cuda, "compat"), { recursive: true });
  const version = { cuda: { name: "CUDA SDK", version: img.cuda } };
  writeFileSync(join(cuda, "version.json"), `${JSON.stringify(version, null, 3)}\n`);
  if (img.compat) {
    writeFileSync(join(cuda, "compat", `libcuda.so.${img.compat}`), "");
    symlinkSync(`libcuda.so.${img.compat}`, join(cuda, "compat", "libcuda.so.1"));
  }
  try {
    renameSync(tmp, root);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another start made it first
  }
  return root;
}

/** An enroot squashfs image, not an OCI one. */
export const isSqsh = (i: SimImage): boolean => i.name.endsWith(".sqsh");

export function readContainers(stateDir: string): SimContainers {
  const file = join(stateDir, CONTAINERS_FILE);
  if (!existsSync(file)) return { images: [...DEFAULT_IMAGES] };
  return JSON.parse(readFileSync(file, "utf8")) as SimContainers;
}

export function writeContainers(stateDir: string, c: SimContainers): void {
  const file = join(stateDir, CONTAINERS_FILE);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(c, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

export interface StartRecord {
  /** podman, docker or enroot: which CLI was asked. */
  runtime: string;
  image: string;
  devices: string[];
  /** Started, or refused before the command ran (and why). */
  outcome: "started" | "refused";
  reason?: string;
  atMs: number;
}

export function recordStart(stateDir: string, r: StartRecord): void {
  appendFileSync(join(stateDir, STARTS_FILE), `${JSON.stringify(r)}\n`);
}

export function readStarts(stateDir: string): StartRecord[] {
  const file = join(stateDir, STARTS_FILE);
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StartRecord);
}

/** The image's entry as `image inspect` shows it (the fields the suite and docker users read). */
export function inspectOf(img: SimImage): unknown {
  return {
    Id: `sha256:${Buffer.from(img.name).toString("hex").padEnd(64, "0").slice(0, 64)}`,
    RepoTags: [img.name],
    Config: {
      Env: [
        "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        `CUDA_VERSION=${img.cuda}`,
        `NVIDIA_REQUIRE_CUDA=${requirementOf(img)}`,
        "NVIDIA_VISIBLE_DEVICES=all",
        "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
      ],
      Cmd: ["/bin/bash"],
    },
  };
}
