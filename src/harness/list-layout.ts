// `run --list --layout`: the tests a run would make are those of the layout's instances, not of
// the GPUs as they are. Each node's GPUs are read (nothing is changed) and the layout planned
// offline for them, as the apply would place it; a GPU the layout leaves alone keeps what it has.
import { entryFor, layoutTarget, readNode } from "../mig/apply/index.js";
import type { GpuSnapshot, GpuTarget } from "../mig/apply/types.js";
import type { LayoutConfig } from "../mig/layout/index.js";
import type { Instance } from "../workloads/instances.js";
import type { NodeSession } from "./session.js";

function plannedOf(node: string, g: GpuSnapshot, t: GpuTarget): Instance[] {
  const gpu = { node, gpu: g.index, gpuUuid: g.uuid, gpuName: g.name, sm: null, memoryMiB: null };
  if (!t.migEnabled)
    return [
      {
        ...gpu,
        uuid: g.uuid,
        profile: "whole-gpu",
        gpuInstanceId: null,
        computeInstanceId: null,
        placement: null,
      },
    ];
  // Not created yet: ids in placement order, a uuid that says it is planned.
  return t.gis.flatMap((gi, i) =>
    gi.cis.map((ci, j) => ({
      ...gpu,
      uuid: `planned-${node}-${g.index}-${i}-${j}`,
      profile: ci.profile,
      gpuInstanceId: i,
      computeInstanceId: j,
      placement: `${gi.start}:${gi.size}`,
    })),
  );
}

/** The node's instances under `config`, planned offline; replaces what discovery found. */
export async function planListedLayout(s: NodeSession, config: LayoutConfig): Promise<void> {
  const snapshot = await readNode(s, s.node);
  const found = (await s.discover()).instances;
  const instances = snapshot.gpus.flatMap((g) => {
    const entry = entryFor(config, g);
    if (!entry) return found.filter((i) => i.gpu === g.index);
    return plannedOf(s.node.name, g, layoutTarget(config, entry, g, snapshot.driver));
  });
  s.assume({ ...(s.discovered ?? { driver: snapshot.driver, cuda: null }), instances });
}
