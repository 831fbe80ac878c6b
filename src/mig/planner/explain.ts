// Why a layout does not fit, in the words of the GPU's rules: which profile the GPU or driver
// lacks, which count exceeds what the driver offers, which profiles may not be combined, and
// which instances collide on which memory slices.

import { bestPartial, maskText, rangeMask, type Slot, sliceText } from "./place.js";
import type { PlannerCatalog, PlannerProfile } from "./types.js";

export function findProfile(catalog: PlannerCatalog, name: string): PlannerProfile | undefined {
  const n = name
    .trim()
    .replace(/^MIG\s+/i, "")
    .toLowerCase();
  return catalog.profiles.find((p) => p.name.toLowerCase() === n);
}

function on(catalog: PlannerCatalog): string {
  return `${catalog.gpu} at driver ${catalog.driver}`;
}

function list(xs: readonly (string | number)[]): string {
  if (xs.length <= 1) return xs.map(String).join("");
  return `${xs.slice(0, -1).join(", ")} or ${xs[xs.length - 1]}`;
}

export function unknownProfileReason(catalog: PlannerCatalog, name: string): string {
  const later = catalog.laterProfiles?.[name];
  if (later !== undefined) {
    return `${on(catalog)} has no GPU-instance profile ${name}: it comes with driver ${later} or later`;
  }
  const offered = catalog.profiles.map((p) => p.name).join(", ");
  return `${on(catalog)} has no GPU-instance profile ${name}; it offers ${offered}`;
}

export function unknownCiReason(catalog: PlannerCatalog, gi: PlannerProfile, key: string): string {
  const splits = gi.ciProfiles.map((c) => `${c.name} (up to ${c.maxInstances})`).join(", ");
  return `${on(catalog)} has no compute-instance profile ${key}: a ${gi.name} GPU instance holds ${splits}`;
}

export function countReason(p: PlannerProfile, asked: number, catalog: PlannerCatalog): string {
  return `${asked} × ${p.name} asked, but ${on(catalog)} offers at most ${p.maxInstances} ${p.name} instance${p.maxInstances === 1 ? "" : "s"}`;
}

export function sliceSumReason(
  catalog: PlannerCatalog,
  counts: ReadonlyMap<PlannerProfile, number>,
): string | null {
  let sum = 0;
  const parts: string[] = [];
  for (const [p, n] of counts) {
    sum += n * p.memorySlices;
    parts.push(`${n} × ${p.name} = ${n * p.memorySlices}`);
  }
  if (sum <= catalog.memorySlices) return null;
  return `the GPU instances need ${sum} memory slices (${parts.join(", ")}), but ${catalog.gpu} has ${catalog.memorySlices}`;
}

export function pairReasons(
  catalog: PlannerCatalog,
  counts: ReadonlyMap<PlannerProfile, number>,
): string[] {
  const out: string[] = [];
  const present = [...counts.keys()];
  for (const [a, b] of catalog.forbiddenPairs) {
    const pa = present.find((p) => p.id === a);
    const pb = present.find((p) => p.id === b);
    if (pa && pb) {
      out.push(
        `${pa.name} and ${pb.name} cannot be used together before driver R510 (this plan is for ${catalog.driver}); drop one of them or plan for R510 or later`,
      );
    }
  }
  return out;
}

export function ofaReason(
  catalog: PlannerCatalog,
  counts: ReadonlyMap<PlannerProfile, number>,
): string | null {
  const takers = [...counts].filter(([p]) => p.ofa > 0);
  const used = takers.reduce((a, [p, n]) => a + n * p.ofa, 0);
  if (used <= catalog.ofaTotal) return null;
  const names = takers.map(([p, n]) => (n > 1 ? `${n} × ${p.name}` : p.name)).join(" and ");
  return `${names} each take an optical-flow accelerator (the media extensions), but ${catalog.gpu} has ${catalog.ofaTotal}; keep one instance with media extensions`;
}

export const PLACEMENT_SYNTAX_REASON = (catalog: PlannerCatalog) =>
  `driver ${catalog.driver} cannot create a GPU instance at a chosen slice (\`-cgi ID:start\` needs R525 or later); drop \`placements\` or plan for a newer driver`;

function slotName(slot: Slot, start: number): string {
  const by = slot.fixed !== null ? ` (set by ${slot.origin ?? "placements"})` : "";
  return `${slot.profile.name} on ${sliceText(start, slot.profile.memorySlices)}${by}`;
}

/**
 * The instances that cannot be placed in the best arrangement there is, each with the
 * instances that block its allowed placements.
 */
export function collisionReasons(catalog: PlannerCatalog, slots: readonly Slot[]): string[] {
  const starts = bestPartial(slots, catalog.memorySlices);
  const placed = slots.flatMap((slot, i) => {
    const s = starts[i];
    return s === null || s === undefined ? [] : [{ slot, start: s }];
  });
  const used = placed.reduce((m, x) => m | rangeMask(x.start, x.slot.profile.memorySlices), 0);
  const free = rangeMask(0, catalog.memorySlices) & ~used;
  const out: string[] = [];
  slots.forEach((slot, i) => {
    if (starts[i] !== null) return;
    const size = slot.profile.memorySlices;
    const options = slot.fixed === null ? slot.profile.starts : [slot.fixed];
    // Group the allowed places by the instance that takes them: "4g.40gb on slices 0-3 takes
    // the places at 0 and 2" reads better than one clause per place.
    const takers = new Map<string, number[]>();
    for (const s of options) {
      const m = rangeMask(s, size);
      for (const x of placed) {
        if ((rangeMask(x.start, x.slot.profile.memorySlices) & m) === 0) continue;
        const key = slotName(x.slot, x.start);
        takers.set(key, [...(takers.get(key) ?? []), s]);
      }
    }
    const blocked = [...takers].map(
      ([who, at], k) =>
        `${who} ${k === 0 ? "takes " : ""}the place${at.length === 1 ? "" : "s"} at ${listAnd(at)}`,
    );
    const where =
      slot.fixed === null
        ? `it can start only at slice ${list(slot.profile.starts)} (${size} slice${size === 1 ? "" : "s"}${slot.profile.starts.length > 1 ? " each" : ""})`
        : `${slot.origin ?? "placements"} puts it at slice ${slot.fixed}`;
    let text = `${slot.profile.name} does not fit: ${where}; ${blocked.join(", ")}`;
    if (free !== 0) {
      const f = maskText(free, catalog.memorySlices);
      text += `. ${cap(f)} ${/^slice \d+$/.test(f) ? "stays" : "stay"} free, but ${slot.profile.name} cannot start there`;
    }
    out.push(text);
  });
  return out;
}

function listAnd(xs: readonly number[]): string {
  if (xs.length <= 1) return xs.join("");
  return `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1]}`;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
