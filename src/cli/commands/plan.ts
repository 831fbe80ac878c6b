// `slicecheck plan`: offline, against the built-in catalogue or a GPU's own -lgip/-lgipp. Does a layout fit a GPU at a
// driver, where does each GPU instance go and which nvidia-smi calls build it; or why not and
// what would fit instead. `--enumerate` lists every combination of GPU-instance profiles.
// Exit 0 when it fits, 1 when it does not; bad input throws (exit 3 through the caller).

import { SlicecheckError } from "../../errors.js";
import {
  entriesFor,
  type LayoutEntry,
  noEntryReason,
  selectConfig,
} from "../../mig/layout/index.js";
import {
  type Alternative,
  combinationText,
  enumerateCombinations,
  type PlannerCatalog,
  type PlanResult,
  planRequest,
  sliceMap,
} from "../../mig/planner/index.js";
import { loadLayoutInput } from "../input.js";
import { BUILTIN, type PlanSourceOptions, planSource } from "./plan-source.js";

export interface PlanCliOptions extends PlanSourceOptions {
  config?: string;
  json?: boolean;
  enumerate?: boolean;
}

export interface PlanIo {
  out(l: string): void;
  err(l: string): void;
}

interface DevicePlan {
  entry: LayoutEntry;
  appliesTo: "all" | number[];
  result: PlanResult;
}

function deviceJson(d: DevicePlan) {
  const r = d.result;
  return {
    gpu: r.gpuIndex,
    appliesTo: d.appliesTo,
    entry: d.entry.index + 1,
    line: d.entry.line,
    migEnabled: r.migEnabled,
    fits: r.fits,
    instances: r.instances.map((i) => ({
      profile: i.profile,
      profileId: i.profileId,
      start: i.start,
      size: i.size,
      placedBy: i.placedBy,
      computeInstances: i.computeInstances,
    })),
    commands: r.commands,
    reasons: r.reasons,
    alternatives: r.alternatives,
    notes: r.notes,
  };
}

function label(d: DevicePlan): string {
  return d.appliesTo === "all" ? "every GPU" : `GPU ${d.result.gpuIndex}`;
}

function humanDevice(d: DevicePlan, catalog: PlannerCatalog, io: PlanIo): void {
  const r = d.result;
  const head = `${label(d)} (entry ${d.entry.index + 1}, line ${d.entry.line})`;
  if (!r.migEnabled) {
    io.out(`${head}: fits — MIG off, nothing to create`);
    return;
  }
  io.out(`${head}: ${r.fits ? "fits" : "does not fit"}`);
  if (r.fits) {
    for (const l of sliceMap(r.instances, catalog.memorySlices)) io.out(`    ${l}`);
    if (r.commands.length === 0) io.out("  no GPU instances to create");
    else {
      const forAll = d.appliesTo === "all" ? " (shown for GPU 0; use -i N for each GPU)" : "";
      io.out(`  commands${forAll}:`);
      for (const c of r.commands) io.out(`    ${c.join(" ")}`);
    }
  } else {
    io.out("  why:");
    for (const reason of r.reasons) io.out(`    - ${reason}`);
    if (r.alternatives.length > 0) {
      io.out("  closest layouts that fit:");
      for (const a of r.alternatives)
        io.out(`    - ${combinationText(a.migDevices)}  (${a.change})`);
    }
  }
  for (const n of r.notes) io.out(`  note: ${n}`);
}

function enumerate(catalog: PlannerCatalog, o: PlanCliOptions, io: PlanIo): number {
  const combinations = enumerateCombinations(catalog);
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          gpu: catalog.gpu,
          driver: catalog.driver,
          memorySlices: catalog.memorySlices,
          combinations,
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(
    `${catalog.gpu}, driver ${catalog.driver}: ${combinations.length} combinations of GPU-instance profiles fit`,
  );
  for (const c of combinations) io.out(`  ${combinationText(c)}`);
  return 0;
}

export async function planCommand(
  layout: string | undefined,
  o: PlanCliOptions,
  io: PlanIo,
): Promise<number> {
  const { product, board, catalog, origin } = await planSource(o);
  if (o.enumerate) {
    if (layout !== undefined) {
      throw new SlicecheckError(
        "USAGE",
        "--enumerate lists every combination for the GPU and takes no LAYOUT; drop one of them",
        { layout },
      );
    }
    return enumerate(catalog, o, io);
  }
  if (layout === undefined) {
    throw new SlicecheckError(
      "USAGE",
      "plan needs a LAYOUT file (a mig-parted config) or --enumerate",
      {},
    );
  }
  const config = selectConfig(await loadLayoutInput(layout), o.config);
  const devices = devicePlans(config, board.pciId, catalog);
  const reasons: string[] = [];
  const alternatives: (Alternative & { gpu: number })[] = [];
  if (devices.length === 0) {
    const matching = entriesFor(config, board.pciId).length > 0;
    reasons.push(
      matching
        ? `config '${config.name}' has entries for ${product}, but they list no GPU index (devices: [])`
        : noEntryReason(config, product, board.pciId),
    );
  }
  for (const d of devices) {
    const prefix = devices.length > 1 ? `${label(d)}: ` : "";
    reasons.push(...d.result.reasons.map((r) => prefix + r));
    alternatives.push(...d.result.alternatives.map((a) => ({ gpu: d.result.gpuIndex, ...a })));
  }
  const fits = devices.length > 0 && devices.every((d) => d.result.fits);
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          fits,
          gpu: product,
          board: board.smiName,
          pciId: board.pciId,
          driver: catalog.driver,
          catalogue: origin,
          layout,
          config: config.name,
          devices: devices.map(deviceJson),
          commands: devices.flatMap((d) => d.result.commands),
          reasons,
          alternatives,
        },
        null,
        2,
      ),
    );
    return fits ? 0 : 1;
  }
  io.out(
    `config '${config.name}' of ${layout} on ${product} (${board.smiName}, ${board.pciId}), driver ${catalog.driver}${origin === BUILTIN ? "" : `; profiles from ${origin}`}`,
  );
  if (devices.length === 0) io.out(`  does not apply: ${reasons[0]}`);
  for (const d of devices) humanDevice(d, catalog, io);
  io.out(fits ? "result: fits" : "result: does not fit");
  return fits ? 0 : 1;
}

/** The plan of each GPU the config's entries for this board name. */
function devicePlans(
  config: ReturnType<typeof selectConfig>,
  pciId: string,
  catalog: PlannerCatalog,
): DevicePlan[] {
  const devices: DevicePlan[] = [];
  for (const entry of entriesFor(config, pciId)) {
    const request = {
      migEnabled: entry.migEnabled,
      devices: entry.migDevices,
      placements: entry.placements,
    };
    // `devices: all` is planned once, for GPU 0: every GPU of this product gets the same plan.
    const indices = entry.devices === "all" ? [0] : entry.devices;
    for (const i of indices) {
      devices.push({ entry, appliesTo: entry.devices, result: planRequest(catalog, request, i) });
    }
  }
  return devices;
}
