// The nvidia-smi calls that build a planned layout on an empty GPU, in order. One `-cgi` per GPU
// instance, so that `apply` can re-read `-lgi` after each change and name the one that failed.

import { type Argv, createComputeInstances, createGpuInstances } from "../../nvsmi/index.js";
import type { PlannedGi, PlannerCatalog, PlanStep } from "./types.js";

/**
 * Creation order: the largest GPU instances first. With explicit starts the order does not
 * matter; without them (before R525) the driver picks a free placement for each `-cgi`, and the
 * GUIDE's example fails with Insufficient Resources when a 3g comes after the 1g and 2g ones.
 */
function creationOrder(gis: readonly PlannedGi[], catalog: PlannerCatalog): PlannedGi[] {
  const compute = (g: PlannedGi) =>
    catalog.profiles.find((p) => p.id === g.profileId)?.computeSlices ?? 0;
  return [...gis].sort((a, b) => b.size - a.size || compute(b) - compute(a) || a.start - b.start);
}

export function planSteps(
  gis: readonly PlannedGi[],
  catalog: PlannerCatalog,
  gpu: number,
): PlanStep[] {
  const steps: PlanStep[] = [];
  for (const gi of creationOrder(gis, catalog)) {
    const whole = isWholeGi(gi, catalog);
    steps.push({
      kind: "create-gi",
      gpu,
      profileId: gi.profileId,
      start: gi.placedBy === "command" ? gi.start : null,
      withDefaultCi: whole,
      placement: { start: gi.start, size: gi.size },
    });
    if (!whole) {
      steps.push({
        kind: "create-ci",
        gpu,
        ciProfileIds: gi.computeInstances.map((c) => c.profileId),
        gi: { profileId: gi.profileId, start: gi.start, size: gi.size },
      });
    }
  }
  return steps;
}

function isWholeGi(gi: PlannedGi, catalog: PlannerCatalog): boolean {
  const p = catalog.profiles.find((x) => x.id === gi.profileId);
  const only = gi.computeInstances[0];
  return gi.computeInstances.length === 1 && only !== undefined && only.size === p?.computeSlices;
}

/** How a GI whose ID is not known yet appears in a printed command; `apply` substitutes it. */
export function giPlaceholder(gi: { start: number; size: number }): string {
  return `<GI@${gi.start}:${gi.size}>`;
}

/**
 * argv of a step. `giId` gives the ID `-cgi` reported for a GI (by its planned placement); an
 * offline plan has none, and the `-gi` argument then reads `<GI@start:size>`.
 */
export function stepArgv(
  step: PlanStep,
  giId?: (gi: { start: number; size: number }) => number | undefined,
): Argv {
  if (step.kind === "create-gi") {
    const request =
      step.start === null ? step.profileId : { profile: step.profileId, start: step.start };
    return createGpuInstances(step.gpu, [request], { defaultComputeInstance: step.withDefaultCi });
  }
  const id = giId?.(step.gi);
  if (id !== undefined) return createComputeInstances(step.gpu, id, step.ciProfileIds);
  // Build with a stand-in ID so the argument order stays the builder's, then name the GI.
  const argv = [...createComputeInstances(step.gpu, 0, step.ciProfileIds)];
  const at = argv.indexOf("-gi");
  argv[at + 1] = giPlaceholder(step.gi);
  return argv;
}
