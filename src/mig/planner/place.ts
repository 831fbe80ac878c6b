// Placement search: put GPU instances on memory slices without overlap, each at a start its
// profile allows. GPUs have at most 8 memory slices, so occupancy is a bit mask and a plain
// backtracking search is exhaustive and instant.

import type { PlannerProfile } from "./types.js";

/** One GPU instance to place; `fixed` is a start the layout demands. */
export interface Slot {
  profile: PlannerProfile;
  fixed: number | null;
  /** Why it is fixed, for messages ("placements" in the layout). */
  origin?: string;
}

export function rangeMask(start: number, size: number): number {
  return ((1 << size) - 1) << start;
}

export function sliceText(start: number, size: number): string {
  return size === 1 ? `slice ${start}` : `slices ${start}-${start + size - 1}`;
}

/** Runs of set bits in `mask` as `slices 6-7`, `slice 3`. */
export function maskText(mask: number, total: number): string {
  const runs: string[] = [];
  let s = -1;
  for (let i = 0; i <= total; i++) {
    const on = i < total && (mask & (1 << i)) !== 0;
    if (on && s < 0) s = i;
    if (!on && s >= 0) {
      runs.push(sliceText(s, i - s));
      s = -1;
    }
  }
  return runs.join(", ");
}

function startsOf(slot: Slot): readonly number[] {
  return slot.fixed === null ? slot.profile.starts : [slot.fixed];
}

/**
 * Search order: fixed slots first, then the largest, then the most constrained. Equal free slots
 * of one profile are interchangeable, so their starts are forced to rise (no symmetric retries).
 */
function searchOrder(slots: readonly Slot[]): number[] {
  return slots
    .map((_, i) => i)
    .sort((a, b) => {
      const x = slots[a]!;
      const y = slots[b]!;
      const fx = x.fixed === null ? 1 : 0;
      const fy = y.fixed === null ? 1 : 0;
      return (
        fx - fy ||
        y.profile.memorySlices - x.profile.memorySlices ||
        x.profile.starts.length - y.profile.starts.length ||
        x.profile.id - y.profile.id ||
        a - b
      );
    });
}

function sameFreeProfile(a: Slot | undefined, b: Slot): boolean {
  return a !== undefined && a.fixed === null && b.fixed === null && a.profile.id === b.profile.id;
}

/** Starts for every slot (in slot order) with no overlap, or null when none exists. */
export function placeAll(slots: readonly Slot[], memorySlices: number): number[] | null {
  const order = searchOrder(slots);
  const starts: number[] = new Array(slots.length).fill(-1);
  const full = rangeMask(0, memorySlices);
  const go = (k: number, used: number): boolean => {
    if (k === order.length) return true;
    const i = order[k]!;
    const slot = slots[i]!;
    const prev = k > 0 ? order[k - 1]! : -1;
    const floor = prev >= 0 && sameFreeProfile(slots[prev], slot) ? starts[prev]! + 1 : 0;
    for (const s of startsOf(slot)) {
      if (s < floor) continue;
      const m = rangeMask(s, slot.profile.memorySlices);
      if ((m & used) !== 0 || (m & ~full) !== 0) continue;
      starts[i] = s;
      if (go(k + 1, used | m)) return true;
    }
    starts[i] = -1;
    return false;
  };
  return go(0, 0) ? starts : null;
}

/**
 * The arrangement that places the most slots (then the most slices), with the rest left out.
 * Used only to explain a layout that does not fit, where at most 8 instances are in play.
 */
export function bestPartial(slots: readonly Slot[], memorySlices: number): (number | null)[] {
  const order = searchOrder(slots);
  const cur: (number | null)[] = new Array(slots.length).fill(null);
  let best: (number | null)[] = [...cur];
  let bestScore = -1;
  const full = rangeMask(0, memorySlices);
  const score = (placed: number, slices: number) => placed * 100 + slices;
  const go = (k: number, used: number, placed: number, slices: number): void => {
    if (k === order.length) {
      if (score(placed, slices) > bestScore) {
        bestScore = score(placed, slices);
        best = [...cur];
      }
      return;
    }
    if (score(placed + order.length - k, memorySlices) <= bestScore) return;
    const i = order[k]!;
    const slot = slots[i]!;
    for (const s of startsOf(slot)) {
      const m = rangeMask(s, slot.profile.memorySlices);
      if ((m & used) !== 0 || (m & ~full) !== 0) continue;
      cur[i] = s;
      go(k + 1, used | m, placed + 1, slices + slot.profile.memorySlices);
      cur[i] = null;
    }
    go(k + 1, used, placed, slices);
  };
  go(0, 0, 0, 0);
  return best;
}
