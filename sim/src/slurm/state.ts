// The simulated node's Slurm view: what `scontrol show node` answers, kept as JSON in
// <stateDir>/slurm.json. Absent, the node is a plain IDLE Slurm node named after the simulated
// node: not drained, which is the state a maintenance tool must refuse to touch.

import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";
import { readState } from "../nvsmi/state.js";

export const SLURM_FILE = "slurm.json";

export interface SlurmNode {
  /** As scontrol prints it: `IDLE`, `IDLE+DRAIN`, `MIXED+DRAIN`, `DOWN`. */
  state: string;
  reason: string | null;
}

export interface SlurmFile {
  nodes: Record<string, SlurmNode>;
}

/** The words `sim fault … slurm --state` takes, and the scontrol state each one shows. */
export const SLURM_STATES: Readonly<Record<string, string>> = {
  idle: "IDLE",
  drained: "IDLE+DRAIN",
  // DRAIN set while a job still runs: scontrol shows the base state with the DRAIN flag.
  draining: "MIXED+DRAIN",
  down: "DOWN",
};

export function defaultSlurm(stateDir: string): SlurmFile {
  return { nodes: { [readState(stateDir).node]: { state: "IDLE", reason: null } } };
}

export function readSlurm(stateDir: string): SlurmFile {
  const file = join(stateDir, SLURM_FILE);
  if (!existsSync(file)) return defaultSlurm(stateDir);
  try {
    const data = JSON.parse(readFileSync(file, "utf8")) as Partial<SlurmFile>;
    if (data && typeof data.nodes === "object" && data.nodes !== null) {
      return { nodes: data.nodes };
    }
  } catch {
    // fall through to the error below
  }
  throw new SlicecheckError("SIM", `${file} is not a valid simulated Slurm state`, { file });
}

export function writeSlurm(stateDir: string, data: SlurmFile): void {
  const file = join(stateDir, SLURM_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`);
  renameSync(tmp, file);
}
