// Faults of the training workload (issue 22): what its own check must catch.
import type { FaultKind } from "./fault-kind.js";
import { readChaos, writeChaos } from "./workloads/chaos.js";

/**
 * wrong-gradient: the all_reduce of every train-step started from now returns a wrong gradient
 * (a bad link, a broken NCCL): the step still runs at full speed, and only the workload's
 * result check can tell. It counts errors=1 and exits 1, as train-step.cu does with
 * --plant-error, so the training suite must fail the instance, never pass it on its timing.
 */
export const wrongGradient: FaultKind = {
  usage: "wrong-gradient: train-step's all_reduce returns a wrong gradient (its check counts it)",
  plant({ stateDir }) {
    const c = readChaos(stateDir);
    c.wrongGradient = true;
    writeChaos(stateDir, c);
    return { record: { kind: "wrong-gradient" }, detail: "train-step's gradients come back wrong" };
  },
  undo({ stateDir }, r) {
    if (r.kind !== "wrong-gradient") return;
    const c = readChaos(stateDir);
    delete c.wrongGradient;
    writeChaos(stateDir, c);
  },
};
