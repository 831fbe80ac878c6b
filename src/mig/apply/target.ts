// What each GPU should look like: from a layout entry through the planner (offline first, with
// the built-in catalogue, so that a bad layout is refused before any connection; then per GPU,
// with the live `-lgip`/`-lgipp` catalogue, which wins), or from a journal's original state.

import { SlicecheckError } from "../../errors.js";
import {
  defaultDriver,
  PRODUCTS,
  type ProductKey,
  productFacts,
  resolveBoard,
} from "../catalog/index.js";
import { entryMatchesDevice, type LayoutConfig, type LayoutEntry } from "../layout/index.js";
import {
  builtinCatalog,
  findProfile,
  fromListings,
  type PlannerCatalog,
  type PlanResult,
  type PlanStep,
  planRequest,
  supportsPlacementSyntax,
} from "../planner/index.js";
import type { GiState, GpuListings, GpuSnapshot, GpuTarget, TargetGi } from "./types.js";

function layoutError(message: string, context: Record<string, unknown> = {}): SlicecheckError {
  return new SlicecheckError("LAYOUT", message, context);
}

function requestOf(entry: LayoutEntry) {
  return { migEnabled: entry.migEnabled, devices: entry.migDevices, placements: entry.placements };
}

/** Catalogued products an entry is for: those its device-filter names, or all without one. */
function candidates(entry: LayoutEntry): ProductKey[] {
  if (entry.deviceFilter === null) return [...PRODUCTS];
  return PRODUCTS.filter((p) =>
    productFacts(p).boards.some((b) => entry.deviceFilter?.some((f) => f === b.pciId)),
  );
}

/**
 * Refuses, before any node is touched, a config whose entry fits none of the GPUs it is for at
 * the newest catalogued driver (the most permissive one: profiles only ever got added). An
 * entry whose filter names no catalogued GPU is left to the live check.
 */
export function validateOffline(config: LayoutConfig, file: string): void {
  for (const entry of config.entries) {
    if (!entry.migEnabled) continue;
    const products = candidates(entry);
    if (products.length === 0) continue;
    const plans = products.map((p) => ({
      product: p,
      plan: planRequest(builtinCatalog(p, defaultDriver(p)), requestOf(entry)),
    }));
    if (plans.some((x) => x.plan.fits)) continue;
    // Without a filter every product is a candidate: name the ones that at least know the
    // profiles asked for, so the reasons are about counts and placements, not a product list.
    const knowing = plans.filter(
      (x) => !x.plan.reasons.some((r) => /has no (GPU|compute)-instance profile/.test(r)),
    );
    const shown = (entry.deviceFilter === null && knowing.length > 0 ? knowing : plans).slice(0, 4);
    const lines = shown.flatMap((x) => x.plan.reasons.map((r) => `  - ${r}`));
    if (entry.deviceFilter === null && knowing.length === 0) {
      const asked = entry.migDevices.map((d) => d.gi);
      lines.splice(0, lines.length, `  - no catalogued GPU offers all of ${asked.join(", ")}`);
    }
    const example = shown[0]?.product ?? "H100-80GB";
    throw layoutError(
      `${file}:${entry.line}: config '${config.name}', entry ${entry.index + 1} fits none of the GPUs it is for:\n${lines.join("\n")}\nfix the layout; \`slicecheck plan ${file} -c ${config.name} --gpu ${example}\` shows what fits`,
      { file, config: config.name, entry: entry.index + 1 },
    );
  }
}

/** The entry of `config` that applies to this GPU; null when none does (the GPU is left alone). */
export function entryFor(config: LayoutConfig, gpu: GpuSnapshot): LayoutEntry | null {
  const hits = config.entries.filter(
    (e) =>
      (e.deviceFilter === null ||
        (gpu.pciDeviceId !== null && entryMatchesDevice(e, gpu.pciDeviceId))) &&
      (e.devices === "all" || e.devices.includes(gpu.index)),
  );
  if (hits.length > 1) {
    throw layoutError(
      `config '${config.name}': entries ${hits.map((e) => e.index + 1).join(" and ")} all apply to GPU ${gpu.index} (${gpu.name}, ${gpu.pciDeviceId ?? "no PCI id"}); make their device-filter or devices lists disjoint`,
      { config: config.name, gpu: gpu.index },
    );
  }
  return hits[0] ?? null;
}

/**
 * Refuses a config whose entry names GPU indexes the node does not have (the references are
 * silent on what mig-parted does then; a layout meant for a bigger node would otherwise leave
 * those GPUs silently untested). An entry whose device-filter matches none of the node's GPUs
 * is for other hardware and is ignored, as entryFor ignores it.
 */
export function checkDevicesPresent(config: LayoutConfig, gpus: readonly GpuSnapshot[]): void {
  const have = new Set(gpus.map((g) => g.index));
  for (const e of config.entries) {
    if (e.devices === "all") continue;
    const forThisNode =
      e.deviceFilter === null ||
      gpus.some((g) => g.pciDeviceId !== null && entryMatchesDevice(e, g.pciDeviceId));
    const absent = e.devices.filter((i) => !have.has(i));
    if (!forThisNode || absent.length === 0) continue;
    throw layoutError(
      `config '${config.name}', entry ${e.index + 1} (line ${e.line}) names GPU ${absent.join(", ")}, which this node does not have (its GPUs: ${[...have].sort((a, b) => a - b).join(", ") || "none"}); give this node a config for its GPUs, or select nodes with --nodes`,
      { config: config.name, entry: e.index + 1, absent },
    );
  }
}

/** Whether a MIG mode change of this GPU makes the driver reset it (Ampere); unknown: assume so. */
export function modeChangeNeedsReset(gpu: GpuSnapshot): boolean {
  const board = resolveBoard(gpu.pciDeviceId ?? gpu.name) ?? resolveBoard(gpu.name);
  return board ? productFacts(board.product).modeChangeNeedsReset : true;
}

/** The live catalogue when the driver lists it, else the built-in one for the product. */
export function catalogFor(
  gpu: GpuSnapshot,
  driver: string,
  listings: GpuListings | null = gpu.listings,
): { catalog: PlannerCatalog; live: boolean } {
  if (listings) {
    return { catalog: fromListings({ gpu: gpu.name, driver, ...listings }), live: true };
  }
  const board = resolveBoard(gpu.pciDeviceId ?? gpu.name) ?? resolveBoard(gpu.name);
  if (!board) {
    throw layoutError(
      `GPU ${gpu.index} (${gpu.name}) is not in the built-in catalogue and its driver lists no MIG profiles while MIG is off; enable MIG on it once (nvidia-smi -mig 1 -i ${gpu.index}) so that slicecheck can read its profiles`,
      { gpu: gpu.index },
    );
  }
  try {
    return { catalog: builtinCatalog(board.product, driver), live: false };
  } catch (e) {
    throw layoutError(`GPU ${gpu.index} (${gpu.name}): ${(e as Error).message}`, {
      gpu: gpu.index,
    });
  }
}

/** Instances the entry's `placements` pin: of each named profile, one per listed start. */
function pinnedOf(plan: PlanResult, entry: LayoutEntry, catalog: PlannerCatalog): Set<number> {
  const pinned = new Set<number>();
  for (const [name, starts] of Object.entries(entry.placements)) {
    const p = findProfile(catalog, name);
    if (!p) continue;
    plan.instances.forEach((g, i) => {
      if (g.profileId === p.id && starts.includes(g.start)) pinned.add(i);
    });
  }
  return pinned;
}

/** The target of one GPU under a layout entry; throws LAYOUT when it does not fit this GPU. */
export function layoutTarget(
  config: LayoutConfig,
  entry: LayoutEntry,
  gpu: GpuSnapshot,
  driver: string,
  listings: GpuListings | null = gpu.listings,
): GpuTarget {
  const source = `config '${config.name}' entry ${entry.index + 1}`;
  const base = { gpu: gpu.index, source, notes: [] as string[] };
  if (!entry.migEnabled) return { ...base, migEnabled: false, gis: [], steps: [], live: true };
  if (!gpu.migCapable) {
    throw layoutError(
      `GPU ${gpu.index} (${gpu.name}) has no MIG mode, but ${source} wants MIG enabled on it`,
      { gpu: gpu.index },
    );
  }
  const { catalog, live } = catalogFor(gpu, driver, listings);
  const plan = planRequest(catalog, requestOf(entry), gpu.index);
  if (!plan.fits) {
    throw layoutError(
      `${source} does not fit GPU ${gpu.index} (${gpu.name}, driver ${driver}):\n${plan.reasons.map((r) => `  - ${r}`).join("\n")}`,
      { gpu: gpu.index, config: config.name },
    );
  }
  const pinned = pinnedOf(plan, entry, catalog);
  const gis: TargetGi[] = plan.instances.map((g, i) => ({
    profileId: g.profileId,
    profile: g.profile,
    start: g.start,
    size: g.size,
    pinned: pinned.has(i),
    cis: [...g.computeInstances]
      .sort((a, b) => a.start - b.start)
      .map((c) => ({ profileId: c.profileId, profile: c.profile })),
  }));
  return { ...base, migEnabled: true, gis, steps: plan.steps, live, notes: plan.notes };
}

function computeSlicesOf(profile: string): number | null {
  const m = /^(\d+)g\./.exec(profile);
  return m ? Number(m[1]) : null;
}

/** A GI whose one CI covers it: created with `-cgi … -C` instead of a separate `-cci`. */
function isWhole(gi: GiState): boolean {
  const only = gi.cis[0];
  if (gi.cis.length !== 1 || !only) return false;
  const slices = computeSlicesOf(gi.profile);
  if (only.size !== null && slices !== null) return only.size === slices;
  return only.profile === gi.profile.replace(/(\+me(\.all)?|-me|\+gfx)$/, "");
}

/** The original state a journal recorded, as a target: every GI pinned where it was. */
export function journalTarget(
  gpu: number,
  original: { migCurrent: boolean; gis: GiState[] },
  driver: string,
): GpuTarget {
  const syntax = supportsPlacementSyntax(driver);
  const gis = original.migCurrent ? original.gis : [];
  const order = [...gis].sort((a, b) => b.size - a.size || a.start - b.start);
  const steps: PlanStep[] = [];
  for (const gi of order) {
    const whole = isWhole(gi);
    const placement = { start: gi.start, size: gi.size };
    steps.push({
      kind: "create-gi",
      gpu,
      profileId: gi.profileId,
      start: syntax ? gi.start : null,
      withDefaultCi: whole,
      placement,
    });
    if (!whole && gi.cis.length > 0) {
      steps.push({
        kind: "create-ci",
        gpu,
        ciProfileIds: gi.cis.map((c) => c.profileId),
        gi: { profileId: gi.profileId, ...placement },
      });
    }
  }
  const notes = syntax
    ? []
    : [
        `driver ${driver} predates \`-cgi ID:start\`: the driver places each GPU instance, so the original placements may not come back`,
      ];
  return {
    gpu,
    migEnabled: original.migCurrent,
    gis: [...gis]
      .sort((a, b) => a.start - b.start)
      .map((g) => ({
        profileId: g.profileId,
        profile: g.profile,
        start: g.start,
        size: g.size,
        pinned: true,
        cis: g.cis.map((c) => ({ profileId: c.profileId, profile: c.profile })),
      })),
    steps,
    source: "the journal",
    live: true,
    notes,
  };
}
