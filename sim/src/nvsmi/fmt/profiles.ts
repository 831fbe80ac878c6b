// `nvidia-smi mig -lgip` and `-lgipp`. Column positions measured on the captures: 79 columns
// from R470 (name field 17), 81 from R580 (19), 76 on R450 (14, IDX-8235278810). Every GPU's
// rows go into one table (STACKHPC 4-GPU sample).

import { freeGiCount } from "../alloc.js";
import { d2 } from "../messages.js";
import type { GpuView } from "../view.js";
import { border, l, r, rule, title } from "./box.js";

export function formatLgip(views: readonly GpuView[], nameWidth: number): string[] {
  const n = nameWidth;
  const width = n + 62;
  const out = [
    border(width),
    title("GPU instance profiles:", width),
    `| GPU   Name${" ".repeat(n - 4)}ID    Instances   Memory     P2P    SM    DEC   ENC  |`,
    `|${" ".repeat(n + 13)}Free/Total   GiB              CE    JPEG  OFA  |`,
    rule(width),
  ];
  for (const v of views) {
    for (const p of v.catalog?.giProfiles ?? []) {
      const free = freeGiCount(v, p);
      out.push(
        `|${r(v.gpu.index, 4)}  ${l(`MIG ${p.name}`, n)}${r(p.id, 3)}${r(`${free}/${p.instances}`, 8)}` +
          `${" ".repeat(8)}${l(p.memoryGiB, 11)}No${" ".repeat(5)}${l(p.sm, 3)}${r(p.dec, 5)}${r(p.enc, 6)}   |`,
        `|${" ".repeat(n + 43)}${r(p.ce, 2)}${r(p.jpeg, 6)}${r(p.ofa, 6)}   |`,
        border(width),
      );
    }
  }
  return out;
}

export function formatLgipp(views: readonly GpuView[]): string[] {
  const out: string[] = [];
  for (const v of views) {
    for (const p of v.catalog?.giProfiles ?? []) {
      const starts = p.placements.map((pl) => pl.start);
      const word = starts.length > 1 ? "Placements:" : "Placement :";
      out.push(
        `GPU ${d2(v.gpu.index)} Profile ID ${d2(p.id)} ${word} {${starts.join(",")}}:${p.memorySlices}`,
      );
    }
  }
  return out;
}
