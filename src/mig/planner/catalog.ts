// Planner catalogues: from the built-in catalogue (offline `plan`) or from what a live node
// printed for `-lgip` and `-lgipp`. Both end in the same `PlannerCatalog`, so the planner never
// knows where its facts came from.

import { SlicecheckError } from "../../errors.js";
import type { GpuInstancePlacements, GpuInstanceProfile } from "../../nvsmi/index.js";
import {
  type Catalog,
  catalogFor,
  DRIVERS,
  driverAtLeast,
  type ProductKey,
  parseDriver,
} from "../catalog/index.js";
import type { PlannerCatalog, PlannerCiProfile, PlannerProfile } from "./types.js";

/**
 * First driver branch whose `nvidia-smi mig -cgi` takes `ID:start`. The older `mig -h` text
 * (R450/R460 era, no profile 20) has no placement specifier; the newer one documents it with
 * `15:0` / `1g.10gb:0`, and profile 15 (1g.10gb) only exists from R525 (mig-reference §3, §6).
 * R525 is therefore the earliest branch known to take it; earlier drivers get plain IDs.
 */
export const PLACEMENT_SYNTAX_SINCE = "525";

export function supportsPlacementSyntax(driver: string): boolean {
  return driverAtLeast(driver, PLACEMENT_SYNTAX_SINCE);
}

/**
 * The 4g + 3g rule as the GUIDE states it: before R510 a (4 memory, 4 compute) and a
 * (4 memory, 3 compute) profile could not coexist. Applied here for live catalogues, which carry
 * no rules of their own; the built-in catalogue states the same pairs in `rules`.
 */
export function forbiddenPairsFor(
  profiles: readonly Pick<PlannerProfile, "id" | "memorySlices" | "computeSlices">[],
  driver: string,
): [number, number][] {
  if (driverAtLeast(driver, "510")) return [];
  const four = profiles.find((p) => p.memorySlices === 4 && p.computeSlices === 4);
  const three = profiles.find((p) => p.memorySlices === 4 && p.computeSlices === 3);
  return four && three ? [[four.id, three.id]] : [];
}

function ofaTotalOf(profiles: readonly PlannerProfile[], memorySlices: number): number {
  const whole = profiles.filter((p) => p.memorySlices === memorySlices);
  return Math.max(0, ...whole.map((p) => p.ofa));
}

/** Plan against the built-in catalogue's resolved view of one product at one driver. */
export function fromCatalog(catalog: Catalog): PlannerCatalog {
  const profiles: PlannerProfile[] = catalog.giProfiles.map((g) => ({
    id: g.id,
    name: g.name,
    computeSlices: g.computeSlices,
    memorySlices: g.memorySlices,
    starts: g.placements.map((p) => p.start),
    maxInstances: g.instances,
    ofa: g.ofa,
    ciProfiles: g.ciProfiles.map((c) => ({
      id: c.id,
      name: c.name,
      computeSlices: c.computeSlices,
      starts: [...c.starts],
      maxInstances: c.instances,
      isDefault: c.isDefault,
    })),
  }));
  const memorySlices = catalog.facts.memorySlices;
  return {
    gpu: catalog.product,
    driver: catalog.driver,
    memorySlices,
    profiles,
    forbiddenPairs: catalog.rules.forbiddenPairs,
    ofaTotal: ofaTotalOf(profiles, memorySlices),
    placementSyntax: supportsPlacementSyntax(catalog.driver),
    laterProfiles: laterProfiles(catalog),
  };
}

/** Names this product offers at a later catalogued driver only, with the first such driver. */
function laterProfiles(catalog: Catalog): Record<string, string> {
  const have = new Set(catalog.giProfiles.map((p) => p.name));
  const out: Record<string, string> = {};
  for (const d of DRIVERS[catalog.product]) {
    if (!driverAtLeast(d, catalog.driver) || d === catalog.driver) continue;
    for (const p of catalogFor(catalog.product, d).giProfiles) {
      if (!have.has(p.name) && out[p.name] === undefined) out[p.name] = d;
    }
  }
  return out;
}

export function builtinCatalog(product: ProductKey, driver?: string): PlannerCatalog {
  return fromCatalog(catalogFor(product, driver));
}

/**
 * CI profiles of a live GI profile, derived the way the built-in catalogue does (NVML has
 * 1..4-slice CI profiles with IDs slice-1, packed from slice 0 in steps of their size, plus the
 * whole-GI default). `-lcip` needs an existing GI, so a live catalogue cannot read them up front.
 */
function derivedCiProfiles(
  name: string,
  computeSlices: number,
  memorySlices: number,
): PlannerCiProfile[] {
  const base = name.replace(/(\+me(\.all)?|-me|\+gfx)$/, "");
  const out: PlannerCiProfile[] = [];
  for (let k = 1; k < computeSlices && k <= 4; k++) {
    const starts: number[] = [];
    for (let s = 0; s + k <= computeSlices; s += k) starts.push(s);
    const id = k - 1;
    out.push({
      id,
      name: `${k}c.${base}`,
      computeSlices: k,
      starts,
      maxInstances: starts.length,
      isDefault: false,
    });
  }
  // The whole-GI CI ID (§1): 1 compute slice on 2 memory slices (1g.20gb) uses 7
  // (1_SLICE_REV1); 7g uses NVML's 7_SLICE = 4; the others slices - 1.
  let wholeId = computeSlices === 7 ? 4 : computeSlices - 1;
  if (computeSlices === 1 && memorySlices === 2) wholeId = 7;
  out.push({
    id: wholeId,
    name: base,
    computeSlices,
    starts: [0],
    maxInstances: 1,
    isDefault: true,
  });
  return out;
}

export interface LiveListings {
  gpu: string;
  driver: string;
  /** One GPU's rows of `parseLgip`. */
  profiles: readonly GpuInstanceProfile[];
  /** The same GPU's rows of `parseLgipp`. */
  placements: readonly GpuInstancePlacements[];
  /** CI profiles read with `-lcip`, by GI profile ID, where known. */
  ciProfiles?: Readonly<Record<number, readonly PlannerCiProfile[]>>;
}

/** A planner catalogue from one GPU's `-lgip` and `-lgipp` listings. */
export function fromListings(live: LiveListings): PlannerCatalog {
  parseDriver(live.driver);
  const profiles: PlannerProfile[] = live.profiles.map((p) => {
    const placed = live.placements.find((x) => x.profileId === p.id);
    if (!placed) {
      throw new SlicecheckError(
        "PARSE",
        `-lgipp lists no placements for profile ${p.id} (${p.name}) that -lgip shows; read both from the same GPU`,
        { profileId: p.id },
      );
    }
    const g = /^(\d+)g\./.exec(p.name);
    if (!g) {
      throw new SlicecheckError("PARSE", `cannot tell the compute slices of profile '${p.name}'`, {
        profile: p.name,
      });
    }
    const computeSlices = Number(g[1]);
    return {
      id: p.id,
      name: p.name,
      computeSlices,
      memorySlices: placed.size,
      starts: [...placed.starts],
      maxInstances: p.total,
      ofa: p.ofa,
      ciProfiles: live.ciProfiles?.[p.id] ?? derivedCiProfiles(p.name, computeSlices, placed.size),
    };
  });
  const memorySlices = Math.max(
    0,
    ...profiles.flatMap((p) => p.starts.map((s) => s + p.memorySlices)),
  );
  return {
    gpu: live.gpu,
    driver: live.driver,
    memorySlices,
    profiles,
    forbiddenPairs: forbiddenPairsFor(profiles, live.driver),
    ofaTotal: ofaTotalOf(profiles, memorySlices),
    placementSyntax: supportsPlacementSyntax(live.driver),
  };
}
