// The guardian's last step (see registry.ts): drop the entries of registered processes that died
// without removing themselves (SIGKILL, a kernel OOM kill). Runs detached with its output
// discarded, so it never fails loudly; the next workload's own prune is the fallback.

import { updateState } from "../nvsmi/state.js";
import { pruneDead } from "./registry.js";

const stateDir = process.argv[2];
if (stateDir) {
  try {
    await updateState(stateDir, (state) => ({ changed: pruneDead(state, stateDir), result: 0 }));
  } catch {
    // The node was torn down (its state directory removed) before the workload ended.
  }
}
