// Can the node's container runtime give a container a GPU (issue 23 item 2, "the runtime's
// configuration")? The toolkit can be installed and its CDI spec fresh while the engine the
// node uses was never pointed at either: docker without the `nvidia` runtime (and CDI off)
// answers `--gpus` with "could not select device driver", podman finds no CDI spec in the
// folders it reads ("unresolvable CDI devices"), containerd's CRI plugin has neither CDI nor
// the nvidia runtime and a pod's GPU request gets no device. Pure: the probe's parsed answers in.
import type { ContainerdCri, DockerRuntimeInfo } from "../nvsmi/runtime-config.js";
import { CDI_KIND, CDI_SPEC_DIRS } from "./cdi.js";

/** A CDI spec file found on the node, with its `kind`. */
export interface SpecFile {
  file: string;
  kind: string;
}

export type RuntimeInput =
  | { runtime: null }
  | { runtime: "enroot" }
  | {
      runtime: "docker";
      info: DockerRuntimeInfo;
      /** Where nvidia-container-runtime-hook is on the PATH, or null. */
      hook?: string | null;
      specs: readonly SpecFile[];
    }
  | { runtime: "podman"; dirs: readonly string[]; specs: readonly SpecFile[] }
  | { runtime: "containerd"; cri: ContainerdCri; specs: readonly SpecFile[] };

export interface RuntimeConfigVerdict {
  runtime: string | null;
  /** none: no runtime on the node; unjudged: one this check does not read (enroot); unread:
   * its answers could not be read (the message says why). */
  status: "ok" | "not-configured" | "none" | "unjudged" | "unread";
  /** How it can give GPUs: `nvidia runtime`, `CDI`. */
  paths: string[];
  message: string;
  /** The command that configures it (not-configured only). */
  fix: string | null;
}

export const DOCKER_FIX =
  "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker";
export const CONTAINERD_FIX =
  "sudo nvidia-ctk runtime configure --runtime=containerd && sudo systemctl restart containerd";
const GENERATE_FIX = `sudo nvidia-ctk cdi generate --output=${CDI_SPEC_DIRS[0]}/nvidia.yaml`;

const inDirs = (file: string, dirs: readonly string[]) =>
  dirs.some((d) => file.startsWith(`${d.replace(/\/+$/, "")}/`));

/** The nvidia.com/gpu specs in `dirs`, and those outside them (where a runtime does not look). */
function specsIn(specs: readonly SpecFile[], dirs: readonly string[]) {
  const ours = specs.filter((s) => s.kind === CDI_KIND);
  return {
    inside: ours.filter((s) => inDirs(s.file, dirs)).map((s) => s.file),
    outside: ours.filter((s) => !inDirs(s.file, dirs)).map((s) => s.file),
  };
}

const unconfigured = (runtime: string, why: string, fix: string): RuntimeConfigVerdict => ({
  runtime,
  status: "not-configured",
  paths: [],
  message: `${runtime} cannot give containers a GPU: ${why}; fix: ${fix} [RUNTIME_NOT_CONFIGURED]`,
  fix,
});

const ok = (runtime: string, paths: string[], how: string): RuntimeConfigVerdict => ({
  runtime,
  status: "ok",
  paths,
  message: `${runtime} gives containers GPUs through ${how}`,
  fix: null,
});

/**
 * docker: the `nvidia` runtime NVIDIA's install guide registers; or dockerd's own `--gpus`
 * driver, which it registers whenever nvidia-container-runtime-hook (the toolkit's) is on its
 * PATH (moby daemon/nvidia_linux.go), so a node with the hook and no registered runtime still
 * gives GPUs and is not failed; or CDI with a spec in its CDISpecDirs.
 */
function docker(
  info: DockerRuntimeInfo,
  hook: string | null,
  specs: readonly SpecFile[],
): RuntimeConfigVerdict {
  const nvidia = Object.keys(info.runtimes).filter(
    (n) => n === "nvidia" || /nvidia-container-runtime/.test(info.runtimes[n] ?? ""),
  );
  const dirs = info.cdiSpecDirs ?? [];
  const cdi = dirs.length > 0 ? specsIn(specs, dirs).inside : [];
  const paths = [
    ...(nvidia.length ? ["nvidia runtime"] : []),
    ...(hook ? ["gpus hook"] : []),
    ...(cdi.length ? ["CDI"] : []),
  ];
  if (paths.length)
    return ok(
      "docker",
      paths,
      [
        nvidia.length ? `the ${nvidia.join(", ")} runtime` : "",
        hook ? `--gpus (its driver runs ${hook})` : "",
        cdi.length ? `CDI (${cdi.join(", ")}; --device nvidia.com/gpu=…)` : "",
      ]
        .filter(Boolean)
        .join(" and "),
    );
  const cdiWhy =
    dirs.length === 0
      ? 'CDI is off (docker info lists no CDISpecDirs; "features": {"cdi": true} in daemon.json, docker 25 or later)'
      : `no ${CDI_KIND} spec in its CDISpecDirs (${dirs.join(", ")})`;
  return unconfigured(
    "docker",
    `no nvidia runtime in docker info's Runtimes (${Object.keys(info.runtimes).join(", ") || "none"}), no nvidia-container-runtime-hook for --gpus, and ${cdiWhy}`,
    DOCKER_FIX,
  );
}

function podman(dirs: readonly string[], specs: readonly SpecFile[]): RuntimeConfigVerdict {
  const { inside, outside } = specsIn(specs, dirs);
  if (inside.length) return ok("podman", ["CDI"], `CDI (${inside.join(", ")})`);
  if (outside.length) {
    const folder = outside[0]!.slice(0, outside[0]!.lastIndexOf("/"));
    return unconfigured(
      "podman",
      `the ${CDI_KIND} spec ${outside.join(", ")} is outside the folders podman reads CDI specs from (containers.conf [engine] cdi_spec_dirs: ${dirs.join(", ")})`,
      `add ${folder} to cdi_spec_dirs in containers.conf, or ${GENERATE_FIX}`,
    );
  }
  return unconfigured(
    "podman",
    `no ${CDI_KIND} CDI spec in the folders podman reads (${dirs.join(", ")})`,
    GENERATE_FIX,
  );
}

function containerd(cri: ContainerdCri, specs: readonly SpecFile[]): RuntimeConfigVerdict {
  if (!cri.plugin)
    return unconfigured(
      "containerd",
      "its config has no CRI plugin (io.containerd.grpc.v1.cri or io.containerd.cri.v1.runtime)",
      CONTAINERD_FIX,
    );
  const cdi = cri.cdiEnabled ? specsIn(specs, cri.cdiSpecDirs).inside : [];
  const paths = [
    ...(cri.nvidiaRuntimes.length ? ["nvidia runtime"] : []),
    ...(cdi.length ? ["CDI"] : []),
  ];
  if (paths.length) {
    const rt = cri.nvidiaRuntimes.length
      ? `the ${cri.nvidiaRuntimes.join(", ")} runtime${cri.defaultRuntime && cri.nvidiaRuntimes.includes(cri.defaultRuntime) ? " (the default)" : " (a RuntimeClass names it)"}`
      : "";
    return ok(
      "containerd",
      paths,
      [rt, cdi.length ? `CDI (${cdi.join(", ")})` : ""].filter(Boolean).join(" and "),
    );
  }
  const cdiWhy = cri.cdiEnabled
    ? `enable_cdi is on but no ${CDI_KIND} spec is in its cdi_spec_dirs (${cri.cdiSpecDirs.join(", ")})`
    : `enable_cdi is off in [plugins."${cri.plugin}"]`;
  return unconfigured(
    "containerd",
    `no nvidia runtime under [plugins."${cri.plugin}".containerd.runtimes] and ${cdiWhy}`,
    cri.cdiEnabled
      ? GENERATE_FIX
      : `${CONTAINERD_FIX} (or set enable_cdi = true and ${GENERATE_FIX})`,
  );
}

/** The node's runtime judged by what it reads; no runtime at all is `none`, not a failure
 * here (the containers suite says CONTAINER_RUNTIME_MISSING). */
export function judgeRuntimeConfig(input: RuntimeInput): RuntimeConfigVerdict {
  switch (input.runtime) {
    case null:
      return {
        runtime: null,
        status: "none",
        paths: [],
        message: "no container runtime (podman, docker, containerd, enroot) on the node's PATH",
        fix: null,
      };
    case "enroot":
      return {
        runtime: "enroot",
        status: "unjudged",
        paths: [],
        message:
          "enroot's GPUs come from its nvidia hook (nvidia-container-cli, in the toolkit's state); its configuration is not read",
        fix: null,
      };
    case "docker":
      return docker(input.info, input.hook ?? null, input.specs);
    case "podman":
      return podman(input.dirs, input.specs);
    case "containerd":
      return containerd(input.cri, input.specs);
  }
}
