// The simulated node's container images (issue 23): named entries with the CUDA version their
// CUDA_VERSION env carries, as the nvidia/cuda images set it. Kept in <state>/containers.json
// with the toolkit's planted faults; absent, the node has the default set below, built locally
// (no registry is reachable from a simulated node, nor needed).
import { appendFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const CONTAINERS_FILE = "containers.json";
/** One line per container start the runtime attempted (tests read it: "none started"). */
export const STARTS_FILE = "container-starts.jsonl";

export interface SimImage {
  name: string;
  /** `12.4.1`: the image's CUDA_VERSION. */
  cuda: string;
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
  // The same images as `enroot import -o /opt/enroot/<name>.sqsh docker://…` leaves them
  // (import.md's default name is the URI with `/` and `:` as `+`).
  { name: "/opt/enroot/nvidia+cuda+12.2.0-base-ubuntu22.04.sqsh", cuda: "12.2.0" },
  { name: "/opt/enroot/nvidia+cuda+12.4.1-base-ubuntu22.04.sqsh", cuda: "12.4.1" },
  { name: "/opt/enroot/nvidia+cuda+13.0.0-base-ubuntu24.04.sqsh", cuda: "13.0.0" },
];

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
  const [major, minor] = img.cuda.split(".");
  return {
    Id: `sha256:${Buffer.from(img.name).toString("hex").padEnd(64, "0").slice(0, 64)}`,
    RepoTags: [img.name],
    Config: {
      Env: [
        "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        `CUDA_VERSION=${img.cuda}`,
        `NVIDIA_REQUIRE_CUDA=cuda>=${major}.${minor}`,
        "NVIDIA_VISIBLE_DEVICES=all",
        "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
      ],
      Cmd: ["/bin/bash"],
    },
  };
}
