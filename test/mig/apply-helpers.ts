// Helpers of the apply/assert/restore end-to-end tests: the simulated node's state as the
// simulator keeps it (the oracle: never our own output), and setting a node up by running the
// simulated nvidia-smi against its state directly, as a root shell on the node would.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { initState, readState } from "../../sim/src/nvsmi/state.js";
import { PACKAGE_ROOT } from "../../sim/src/tools.js";
import type { TestCluster } from "../helpers/cluster.js";

export function stateDir(c: TestCluster, node: string): string {
  return join(simNodeRecord(c.inventoryPath, node).dir, "state");
}

/** Runs the built simulated nvidia-smi on a node's state, as root on the node would. */
export function smi(dir: string, ...args: string[]): string {
  return execFileSync(process.execPath, [join(PACKAGE_ROOT, "dist/sim/nvsmi/main.js"), ...args], {
    env: { ...process.env, SLICECHECK_SIM_STATE: dir },
    encoding: "utf8",
  });
}

/** What must come back after a restore: per GPU the mode and every GI's profile, placement, CIs. */
export function layoutOf(dir: string) {
  return readState(dir).gpus.map((g) => ({
    gpu: g.index,
    mig: { current: g.mig.current, pending: g.mig.pending },
    gis: [...g.gis]
      .sort((a, b) => a.start - b.start)
      .map((gi) => ({
        profileId: gi.profileId,
        start: gi.start,
        size: gi.size,
        cis: [...gi.cis]
          .sort((a, b) => a.start - b.start)
          .map((ci) => ({ profileId: ci.profileId, start: ci.start, size: ci.size })),
      })),
  }));
}

/** Everything the simulator keeps for the node, for "nothing changed" comparisons. */
export function fullState(dir: string): unknown {
  return readState(dir);
}

/** Puts a node back to a fresh driver install: MIG off, no faults, no Slurm state, no journal. */
export function freshNode(c: TestCluster, node: string): string {
  const rec = simNodeRecord(c.inventoryPath, node);
  const dir = join(rec.dir, "state");
  initState(dir, { node, product: rec.gpu, gpus: rec.gpus, driver: rec.driver });
  for (const f of ["faults.json", "slurm.json", `journal-${node}.json`]) {
    rmSync(join(dir, f), { force: true });
  }
  return dir;
}

export function nodeJournal(c: TestCluster, node: string): string {
  return join(stateDir(c, node), `journal-${node}.json`);
}

export function localJournal(c: TestCluster, node: string): string {
  return join(c.dir, "journal", `${node}.json`);
}

export function journalsExist(c: TestCluster, node: string): [boolean, boolean] {
  return [existsSync(localJournal(c, node)), existsSync(nodeJournal(c, node))];
}

/** A copy of the cluster's inventory in which `slurm` gives nodes their Slurm node names. */
export function inventoryWithSlurm(c: TestCluster, slurm: Record<string, string>): string {
  const doc = parse(readInventory(c)) as { nodes: Record<string, Record<string, unknown>> };
  for (const [node, name] of Object.entries(slurm)) doc.nodes[node]!.slurm_node = name;
  const path = join(c.dir, "slurm.yaml");
  writeFileSync(path, stringify(doc));
  return path;
}

function readInventory(c: TestCluster): string {
  return readFileSync(c.inventoryPath, "utf8");
}
