// `slicecheck sim fault NODE KIND [--gpu N] [--name X] [--state S]` and `sim fault NODE --clear`:
// plant a state a real node can be found in (someone else's process, a driver client, an
// undrained Slurm node, a GPU that cannot be reset) into a simulated node, or undo them all.

import { join } from "node:path";
import { SlicecheckError } from "../../errors.js";
import type { Out } from "../context.js";
import { loadSim } from "../sim-loader.js";

export interface SimFaultOptions {
  inventory?: string;
  gpu?: number;
  name?: string;
  state?: string;
  instance?: number;
  clear?: boolean;
  json?: boolean;
}

export async function simFaultCommand(
  node: string,
  kind: string | undefined,
  o: SimFaultOptions,
  io: Out,
): Promise<number> {
  const { clusterDirFor, simNodeRecord, clearFaults, FAULT_KINDS, plantFault, ...sim } =
    await loadSim();
  const { clearGresFaults, GRES_FAULTS, plantGresFault, setSlurmState } = sim;
  const inventory = o.inventory ?? sim.DEFAULT_SIM_INVENTORY;
  const stateDir = join(simNodeRecord(inventory, node).dir, "state");
  if (o.clear) {
    if (kind !== undefined) {
      throw new SlicecheckError("USAGE", `--clear removes every planted fault; drop '${kind}'`);
    }
    const undone: unknown[] = await clearFaults(stateDir);
    if (clearGresFaults(clusterDirFor(inventory), node)) undone.push({ kind: "slurm-gres" });
    if (o.json) io.out(JSON.stringify({ node, cleared: undone }, null, 2));
    else io.out(`${node}: cleared ${undone.length} planted fault(s)`);
    return 0;
  }
  if (kind === undefined) {
    const kinds = [
      ...Object.entries(FAULT_KINDS).map(([, k]) => `  ${k.usage}`),
      ...Object.values(GRES_FAULTS).map((u) => `  ${u}`),
    ];
    throw new SlicecheckError("USAGE", `sim fault needs a KIND (or --clear):\n${kinds.join("\n")}`);
  }
  if (kind in GRES_FAULTS) {
    const detail = await plantGresFault(
      clusterDirFor(inventory),
      node,
      kind as keyof typeof GRES_FAULTS,
    );
    if (o.json) io.out(JSON.stringify({ node, planted: { kind } }, null, 2));
    else io.out(`${node}: planted ${kind}: ${detail}`);
    return 0;
  }
  const real =
    kind === "slurm" ? setSlurmState(clusterDirFor(inventory), node, o.state ?? "") : null;
  if (real) {
    if (o.json) io.out(JSON.stringify({ node, planted: { kind, state: o.state } }, null, 2));
    else io.out(`${node}: planted ${kind}: ${real}`);
    return 0;
  }
  const planted = await plantFault(stateDir, kind, {
    gpu: o.gpu,
    name: o.name,
    state: o.state,
    instance: o.instance,
  });
  if (o.json) io.out(JSON.stringify({ node, planted: planted.record }, null, 2));
  else io.out(`${node}: planted ${kind}: ${planted.detail}`);
  return 0;
}
