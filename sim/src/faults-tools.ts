// Faults of the node's software rather than its GPUs.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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
