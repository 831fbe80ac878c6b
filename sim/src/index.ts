// The simulator package's entry: what `slicecheck sim …` uses. The product reaches it only
// through src/cli/sim-loader.ts, at run time, and takes SIM_API from it.
import type { SimApi } from "../../src/cli/sim-loader.js";
import {
  clusterDirFor,
  DEFAULT_SIM_INVENTORY,
  simDown,
  simNodeRecord,
  simStatus,
  simUp,
} from "./cluster.js";
import { clearFaults, FAULT_KINDS, plantFault } from "./faults.js";
import { clearGresFaults, GRES_FAULTS, plantGresFault, setSlurmState } from "./slurmd/cluster.js";
import { buildSimSpec } from "./spec.js";
import { upgradeSimDriver } from "./upgrade.js";

export type { SimNodeStatus } from "./cluster.js";
export type { SimSpecArgs } from "./spec.js";
export type { Regressions } from "./workloads/model.js";
export {
  buildSimSpec,
  clearFaults,
  clearGresFaults,
  clusterDirFor,
  DEFAULT_SIM_INVENTORY,
  FAULT_KINDS,
  GRES_FAULTS,
  plantFault,
  plantGresFault,
  setSlurmState,
  simDown,
  simNodeRecord,
  simStatus,
  simUp,
  upgradeSimDriver,
};

/** What the CLI's loader hands to `slicecheck sim …`; tsc fails here when the two drift apart. */
export const SIM_API = {
  DEFAULT_SIM_INVENTORY,
  buildSimSpec,
  simUp,
  simStatus,
  simDown,
  simNodeRecord,
  clusterDirFor,
  FAULT_KINDS,
  plantFault,
  clearFaults,
  GRES_FAULTS,
  plantGresFault,
  clearGresFaults,
  setSlurmState,
  upgradeSimDriver,
} satisfies SimApi;
