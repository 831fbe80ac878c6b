// Text views of a plan for people: a slice map that shows which GPU instance holds which memory
// slice, e.g.
//     0 1 2 3 4 5 6 7
//    [A A A A|B B|C|.]

import type { Combination, PlannedGi } from "./types.js";

function letter(i: number): string {
  return String.fromCharCode(65 + (i % 26));
}

/** Header, bar and one legend line per instance. */
export function sliceMap(instances: readonly PlannedGi[], memorySlices: number): string[] {
  const owner: number[] = new Array(memorySlices).fill(-1);
  instances.forEach((gi, i) => {
    for (let s = gi.start; s < gi.start + gi.size && s < memorySlices; s++) owner[s] = i;
  });
  let bar = "[";
  for (let s = 0; s < memorySlices; s++) {
    const o = owner[s]!;
    bar += o < 0 ? "." : letter(o);
    if (s < memorySlices - 1) {
      const next = owner[s + 1]!;
      bar += o !== next && !(o < 0 && next < 0) ? "|" : " ";
    }
  }
  bar += "]";
  const header = ` ${Array.from({ length: memorySlices }, (_, s) => String(s % 10)).join(" ")}`;
  const width = Math.max(...instances.map((g) => g.profile.length), 0);
  const legend = instances.map((gi, i) => {
    const where =
      gi.size === 1 ? `slice ${gi.start}` : `slices ${gi.start}-${gi.start + gi.size - 1}`;
    const cis = gi.computeInstances
      .map((c) => (gi.computeInstances.length === 1 ? c.profile : `${c.profile}@${c.start}`))
      .join(", ");
    const by = gi.placedBy === "driver" ? "  (driver picks the slot)" : "";
    return `${letter(i)}  ${gi.profile.padEnd(width)}  ${where.padEnd(11)}  CI ${cis}${by}`;
  });
  return [header, bar, ...legend];
}

/** `3g.40gb × 1, 4g.40gb × 1` */
export function combinationText(c: Combination): string {
  return Object.entries(c)
    .map(([name, n]) => `${name} × ${n}`)
    .join(", ");
}
