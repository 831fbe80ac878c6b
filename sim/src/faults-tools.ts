// Faults of the node's software rather than its GPUs.
import { type FaultKind, usage } from "./fault-kind.js";

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
