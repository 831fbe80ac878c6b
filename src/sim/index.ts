// The simulator package's entry: what `slicecheck sim …` uses. The product reaches it only
// through src/cli/sim-loader.ts, at run time.
export {
  clusterDirFor,
  DEFAULT_SIM_INVENTORY,
  type SimNodeStatus,
  simDown,
  simNodeRecord,
  simStatus,
  simUp,
} from "./cluster.js";
export { clearFaults, FAULT_KINDS, plantFault } from "./faults.js";
export {
  clearGresFaults,
  GRES_FAULTS,
  plantGresFault,
  setSlurmState,
} from "./slurmd/cluster.js";
export { buildSimSpec, type SimSpecArgs } from "./spec.js";
export { upgradeSimDriver } from "./upgrade.js";
export type { Regressions } from "./workloads/model.js";
