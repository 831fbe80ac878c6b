// Faults of the node's software rather than its GPUs.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CONTAINERS_CONF_FILE,
  compatDriverFor,
  readContainers,
  type SimImage,
  writeContainers,
} from "./containers/images.js";
import { type FaultKind, usage } from "./fault-kind.js";
import { cdiDirOf, writeSpec } from "./toolkit/spec.js";

/**
 * nvcc: the node's CUDA toolkit is release `--name X.Y`, whatever the driver's CUDA is (the
 * simulated nvcc, sim/src/host/nvcc.ts, reports it). Planted newer than the driver's (`sim fault
 * NODE nvcc --name 13.0` on a 535 node, CUDA 12.2), it is the node `doctor` must call not ready.
 */
export const nvcc: FaultKind = {
  usage: "nvcc --name X.Y: the node's CUDA toolkit (its nvcc) is release X.Y",
  plant({ state }, o) {
    const release = o.name ?? "";
    if (!/^\d{1,2}\.\d{1,2}$/.test(release))
      throw usage(`nvcc needs --name RELEASE, e.g. --name 13.0 (got '${release || "nothing"}')`);
    const previous = state.nvcc ?? null;
    state.nvcc = release;
    return {
      record: { kind: "nvcc", previous },
      detail: `nvcc is release ${release} (the driver runs CUDA ${state.cuda})`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "nvcc") return;
    if (r.previous === null) delete state.nvcc;
    else state.nvcc = r.previous;
  },
};

/**
 * no-toolkit: the NVIDIA Container Toolkit is not installed: nvidia-ctk and nvidia-container-cli
 * answer "not found" (exit 127). Its spec files stay where they are, as on a real node.
 */
export const noToolkit: FaultKind = {
  usage:
    "no-toolkit: the NVIDIA Container Toolkit is not installed (no nvidia-ctk, nvidia-container-cli)",
  plant({ state }) {
    state.noToolkit = true;
    return { record: { kind: "no-toolkit" }, detail: "the container toolkit is not installed" };
  },
  undo({ state }, r) {
    if (r.kind === "no-toolkit") delete state.noToolkit;
  },
};

/**
 * cdi-stale: the node's CDI spec was generated once, now (`nvidia-ctk cdi generate
 * --output=<its cdi folder>/nvidia.yaml`), and nothing regenerates it: a relayout leaves it naming
 * the old MIG devices until `nvidia-ctk cdi generate` runs again, as on a real node. A node
 * without it has no CDI spec at all (the legacy runtime hook).
 */
export const cdiStale: FaultKind = {
  usage:
    "cdi-stale: a CDI spec generated now, that a relayout leaves stale until `nvidia-ctk cdi generate`",
  plant({ state, stateDir }) {
    const file = join(cdiDirOf(stateDir), "nvidia.yaml");
    const previous = existsSync(file) ? readFileSync(file, "utf8") : null;
    writeSpec(state, file, [cdiDirOf(stateDir)]);
    return {
      record: { kind: "cdi-stale", file, previous },
      detail: `CDI spec written to ${file} for the layout now; a relayout leaves it stale`,
    };
  },
  undo(_ctx, r) {
    if (r.kind !== "cdi-stale") return;
    if (r.previous === null) rmSync(r.file, { force: true });
    else writeFileSync(r.file, r.previous);
  },
};

/**
 * image --name NAME=X.Y[.Z][+compat]: the node has a local container image NAME whose
 * CUDA_VERSION is X.Y.Z (replacing one of that name); `+compat`: it carries the
 * forward-compatibility libraries of that release (cuda-compat-X-Y, its libcuda in
 * /usr/local/cuda/compat). `--clear` puts the image set back. The default set is
 * sim/src/containers/images.ts DEFAULT_IMAGES.
 */
export const image: FaultKind = {
  usage:
    "image --name NAME=CUDA[+compat]: the node has a local container image NAME of CUDA version CUDA (+compat: with cuda-compat)",
  plant({ stateDir }, o) {
    // An OCI name, or an enroot .sqsh by its absolute path (`+` as enroot import names them).
    const m =
      /^((?:\/|[A-Za-z0-9])[A-Za-z0-9._/:@+-]*)=(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)(\+compat)?$/.exec(
        o.name ?? "",
      );
    if (!m)
      throw usage(
        `image needs --name NAME=CUDA[+compat], e.g. --name site/train:1=12.8.0 (got '${o.name ?? "nothing"}')`,
      );
    const c = readContainers(stateDir);
    const before = c.images.find((i) => i.name === m[1]);
    const added: SimImage = { name: m[1]!, cuda: m[2]! };
    if (m[3]) added.compat = compatDriverFor(m[2]!);
    c.images = [...c.images.filter((i) => i.name !== m[1]), added];
    writeContainers(stateDir, c);
    return {
      record: {
        kind: "image",
        name: m[1]!,
        previous: before?.cuda ?? null,
        ...(before?.compat ? { previousCompat: before.compat } : {}),
      },
      detail: `image ${m[1]} (CUDA ${m[2]}${added.compat ? `, compat libcuda ${added.compat}` : ""}) is on the node`,
    };
  },
  undo({ stateDir }, r) {
    if (r.kind !== "image") return;
    const c = readContainers(stateDir);
    c.images = c.images.filter((i) => i.name !== r.name);
    if (r.previous !== null)
      c.images.push({
        name: r.name,
        cuda: r.previous,
        ...(r.previousCompat ? { compat: r.previousCompat } : {}),
      });
    writeContainers(stateDir, c);
  },
};

/** no-runtime --name podman|docker|enroot: that container runtime is not installed on the node
 * (its CLI is moved off the node's PATH, beside it; `--clear` puts it back). */
export const noRuntime: FaultKind = {
  usage:
    "no-runtime --name RUNTIME: the container runtime RUNTIME (podman, docker, enroot) is not installed",
  plant({ stateDir }, o) {
    const name = o.name ?? "";
    if (!["podman", "docker", "enroot"].includes(name))
      throw usage(`no-runtime needs --name podman, docker or enroot (got '${name || "nothing"}')`);
    const bin = join(stateDir, "..", "bin");
    if (existsSync(join(bin, name))) renameSync(join(bin, name), join(bin, `.${name}.absent`));
    return { record: { kind: "no-runtime", name }, detail: `${name} is not on the node's PATH` };
  },
  undo({ stateDir }, r) {
    if (r.kind !== "no-runtime") return;
    const bin = join(stateDir, "..", "bin");
    const hidden = join(bin, `.${r.name}.absent`);
    if (existsSync(hidden)) renameSync(hidden, join(bin, r.name));
  },
};

/** container-sees-all: the runtime gives every container every device of the node, whatever
 * it was asked for (a runtime left on NVIDIA_VISIBLE_DEVICES=all, a privileged container). */
export const containerSeesAll: FaultKind = {
  usage: "container-sees-all: the container runtime gives every container every GPU device",
  plant({ stateDir }) {
    writeContainers(stateDir, { ...readContainers(stateDir), seesAll: true });
    return {
      record: { kind: "container-sees-all" },
      detail: "containers see every device of the node",
    };
  },
  undo({ stateDir }) {
    const c = readContainers(stateDir);
    delete c.seesAll;
    writeContainers(stateDir, c);
  },
};

/** runtime-unconfigured: the toolkit is installed but the node's container engines were never
 * pointed at it: docker has no `nvidia` runtime (and CDI off), podman's containers.conf sends
 * it to a CDI folder without NVIDIA's spec. Their GPU containers are refused as real ones are. */
export const runtimeUnconfigured: FaultKind = {
  usage:
    "runtime-unconfigured: docker has no nvidia runtime and podman reads no NVIDIA CDI spec (nvidia-ctk runtime configure never ran)",
  plant({ stateDir }) {
    writeContainers(stateDir, { ...readContainers(stateDir), unconfigured: true });
    const empty = join(stateDir, "cdi-site");
    mkdirSync(empty, { recursive: true });
    writeFileSync(
      join(stateDir, CONTAINERS_CONF_FILE),
      `# written by sim fault runtime-unconfigured\n[engine]\ncdi_spec_dirs = ["${empty}"]\n`,
    );
    return {
      record: { kind: "runtime-unconfigured" },
      detail: "docker has no nvidia runtime; podman reads CDI specs from a folder without NVIDIA's",
    };
  },
  undo({ stateDir }) {
    const c = readContainers(stateDir);
    delete c.unconfigured;
    writeContainers(stateDir, c);
    rmSync(join(stateDir, CONTAINERS_CONF_FILE), { force: true });
  },
};
