// Plans one layout entry on one GPU: does it fit, where does each GPU instance go, which
// nvidia-smi calls build it on an empty GPU, and if it does not fit, why and what would.

import { closestFits } from "./alternatives.js";
import { planSteps, stepArgv } from "./commands.js";
import { type CiRequest, packComputeInstances } from "./compute.js";
import {
  collisionReasons,
  countReason,
  findProfile,
  ofaReason,
  PLACEMENT_SYNTAX_REASON,
  pairReasons,
  sliceSumReason,
  unknownCiReason,
  unknownProfileReason,
} from "./explain.js";
import { placeAll, type Slot } from "./place.js";
import type {
  PlannedGi,
  PlannerCatalog,
  PlannerCiProfile,
  PlannerProfile,
  PlanRequest,
  PlanResult,
} from "./types.js";

interface GiToPlace {
  profile: PlannerProfile;
  cis: { ci: PlannerCiProfile; start: number }[];
}

interface Resolved {
  gis: GiToPlace[];
  /** GI profile name → count, with names the GPU lacks, for the alternatives. */
  asked: Map<string, number>;
  reasons: string[];
}

function wholeCi(p: PlannerProfile): PlannerCiProfile {
  const ci = p.ciProfiles.find((c) => c.isDefault) ?? p.ciProfiles[p.ciProfiles.length - 1];
  if (ci) return ci;
  // A live catalogue always carries the default CI; keep planning if one was built without.
  return {
    id: 0,
    name: p.name,
    computeSlices: p.computeSlices,
    starts: [0],
    maxInstances: 1,
    isDefault: true,
  };
}

/** Names in the request → GI profiles, whole-GI counts and CI splits packed into GIs. */
function resolve(catalog: PlannerCatalog, request: PlanRequest): Resolved {
  const reasons: string[] = [];
  const asked = new Map<string, number>();
  const whole = new Map<PlannerProfile, number>();
  const splits = new Map<PlannerProfile, CiRequest[]>();
  for (const d of request.devices) {
    if (d.count === 0) continue;
    const p = findProfile(catalog, d.gi);
    if (!p) {
      if (!asked.has(d.gi)) reasons.push(unknownProfileReason(catalog, d.gi));
      asked.set(d.gi, (asked.get(d.gi) ?? 0) + d.count);
      continue;
    }
    if (d.ciSlices === null || d.ciSlices === p.computeSlices) {
      whole.set(p, (whole.get(p) ?? 0) + d.count);
      continue;
    }
    const ci = p.ciProfiles.find((c) => c.computeSlices === d.ciSlices && !c.isDefault);
    if (!ci) {
      reasons.push(unknownCiReason(catalog, p, d.key));
      continue;
    }
    splits.set(p, [...(splits.get(p) ?? []), { ci, count: d.count }]);
  }
  const gis: GiToPlace[] = [];
  for (const p of catalog.profiles) {
    for (let i = 0; i < (whole.get(p) ?? 0); i++) gis.push({ profile: p, cis: [] });
    for (const packed of packComputeInstances(p, splits.get(p) ?? [])) {
      gis.push({ profile: p, cis: packed.cis });
    }
  }
  for (const g of gis) {
    if (g.cis.length === 0) g.cis.push({ ci: wholeCi(g.profile), start: 0 });
    asked.set(g.profile.name, (asked.get(g.profile.name) ?? 0) + 1);
  }
  return { gis, asked, reasons };
}

/** Fixes the starts `placements` names onto the first GIs of each profile. */
function applyPlacements(
  catalog: PlannerCatalog,
  request: PlanRequest,
  gis: readonly GiToPlace[],
  slots: Slot[],
): string[] {
  const reasons: string[] = [];
  let any = false;
  for (const [name, starts] of Object.entries(request.placements)) {
    const p = findProfile(catalog, name);
    if (!p) continue; // already reported as a profile this GPU lacks
    const idx = gis.flatMap((g, i) => (g.profile === p ? [i] : []));
    if (starts.length > idx.length) {
      reasons.push(
        `placements gives ${starts.length} starts for ${p.name}, but the layout has ${idx.length} ${p.name} GPU instance${idx.length === 1 ? "" : "s"}`,
      );
    }
    starts.forEach((s, j) => {
      any = true;
      const i = idx[j];
      if (!p.starts.includes(s)) {
        reasons.push(
          `${p.name} cannot start at memory slice ${s}: ${catalog.gpu} places it only at ${p.starts.join(", ")}`,
        );
      } else if (i !== undefined) {
        slots[i] = { profile: p, fixed: s, origin: "placements" };
      }
    });
  }
  if (any && !catalog.placementSyntax) reasons.push(PLACEMENT_SYNTAX_REASON(catalog));
  return reasons;
}

function ruleReasons(catalog: PlannerCatalog, gis: readonly GiToPlace[]): string[] {
  const counts = new Map<PlannerProfile, number>();
  for (const g of gis) counts.set(g.profile, (counts.get(g.profile) ?? 0) + 1);
  const reasons: string[] = [];
  for (const [p, n] of counts) if (n > p.maxInstances) reasons.push(countReason(p, n, catalog));
  reasons.push(...pairReasons(catalog, counts));
  const ofa = ofaReason(catalog, counts);
  if (ofa) reasons.push(ofa);
  const sum = sliceSumReason(catalog, counts);
  if (sum) reasons.push(sum);
  return reasons;
}

function base(catalog: PlannerCatalog, gpuIndex: number, migEnabled: boolean): PlanResult {
  return {
    fits: false,
    gpu: catalog.gpu,
    driver: catalog.driver,
    gpuIndex,
    migEnabled,
    instances: [],
    steps: [],
    commands: [],
    reasons: [],
    alternatives: [],
    notes: [],
  };
}

/** Plans `request` on GPU `gpuIndex` of the kind `catalog` describes, assumed empty. */
export function planRequest(
  catalog: PlannerCatalog,
  request: PlanRequest,
  gpuIndex = 0,
): PlanResult {
  const result = base(catalog, gpuIndex, request.migEnabled);
  if (!request.migEnabled) {
    result.fits = true;
    result.notes.push("MIG mode off: the GPU is used whole, no GPU instances");
    return result;
  }
  const { gis, asked, reasons } = resolve(catalog, request);
  const slots: Slot[] = gis.map((g) => ({ profile: g.profile, fixed: null }));
  const placementReasons = applyPlacements(catalog, request, gis, slots);
  reasons.push(...placementReasons, ...ruleReasons(catalog, gis));
  let starts: number[] | null = null;
  if (reasons.length === 0) {
    starts = placeAll(slots, catalog.memorySlices);
    if (starts === null) reasons.push(...collisionReasons(catalog, slots));
  }
  if (starts === null) {
    result.reasons = reasons;
    // Only placements (or the driver's lack of them) stand in the way when the profiles
    // themselves fit: then the same profiles without `placements` are the first alternative.
    const free = placeAll(
      gis.map((g) => ({ profile: g.profile, fixed: null })),
      catalog.memorySlices,
    );
    const sameFits =
      free !== null &&
      ruleReasons(catalog, gis).length === 0 &&
      asked.size > 0 &&
      [...asked.keys()].every((n) => findProfile(catalog, n) !== undefined);
    result.alternatives = closestFits(catalog, asked, { sameAllowed: sameFits });
    return result;
  }
  const placedBy = catalog.placementSyntax ? "command" : "driver";
  const instances: PlannedGi[] = gis.map((g, i) => ({
    profile: g.profile.name,
    profileId: g.profile.id,
    start: starts[i]!,
    size: g.profile.memorySlices,
    placedBy,
    computeInstances: g.cis.map((c) => ({
      profile: c.ci.name,
      profileId: c.ci.id,
      start: c.start,
      size: c.ci.computeSlices,
    })),
  }));
  instances.sort((a, b) => a.start - b.start);
  result.fits = true;
  result.instances = instances;
  result.steps = planSteps(instances, catalog, gpuIndex);
  result.commands = result.steps.map((s) => stepArgv(s));
  if (!catalog.placementSyntax && instances.length > 0) {
    result.notes.push(
      `driver ${catalog.driver} predates \`-cgi ID:start\` (R525): the driver picks each placement; the commands create the largest instances first, and the slice map shows one arrangement that works`,
    );
  }
  if (result.steps.some((s) => s.kind === "create-ci")) {
    result.notes.push(
      "GPU instance IDs are known only once -cgi ran: `apply` puts the ID where a command reads <GI@start:size>",
    );
  }
  return result;
}
