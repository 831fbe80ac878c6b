// `nvidia-smi mig -lgi`, `-lci` and `-lcip`. Widths: -lgi 54 (R450/R460), 57, 59 (R580);
// -lci 57 without and 70 with the Placement column; -lcip 88 in every capture.

import { freeCiCount } from "../alloc.js";
import type { SimGi } from "../state.js";
import { ciProfileOf, type GpuView, giProfileOf, listingOrder } from "../view.js";
import { border, l, r, rule, title } from "./box.js";

export function formatLgi(views: readonly GpuView[], nameWidth: number): string[] {
  const n = nameWidth;
  const width = n + 39;
  const out = [
    border(width),
    title("GPU instances:", width),
    `| GPU   Name${" ".repeat(n - 5)}Profile  Instance   Placement  |`,
    `|${" ".repeat(n + 8)}ID       ID       Start:Size |`,
    rule(width),
  ];
  for (const v of views) {
    for (const gi of listingOrder(v)) {
      const p = giProfileOf(v, gi);
      out.push(
        `|${r(v.gpu.index, 4)}  ${l(`MIG ${p.name}`, n)}${r(p.id, 4)}${r(gi.id, 9)}${" ".repeat(10)}${l(`${gi.start}:${gi.size}`, 8)}|`,
        border(width),
      );
    }
  }
  return out;
}

export function formatLci(
  views: readonly GpuView[],
  placement: boolean,
  only: (gi: SimGi) => boolean,
): string[] {
  const width = placement ? 70 : 57;
  const out = placement
    ? [
        border(width),
        title("Compute instances:", width),
        "| GPU     GPU       Name             Profile   Instance   Placement  |",
        "|       Instance                       ID        ID       Start:Size |",
        "|         ID                                                         |",
        rule(width),
      ]
    : [
        border(width),
        title("Compute instances:", width),
        "| GPU     GPU       Name             Profile   Instance |",
        "|       Instance                       ID        ID     |",
        "|         ID                                            |",
        rule(width),
      ];
  for (const v of views) {
    for (const gi of listingOrder(v).filter(only)) {
      for (const ci of [...gi.cis].sort((a, b) => a.id - b.id)) {
        const p = ciProfileOf(v, gi, ci);
        const head = `|${r(v.gpu.index, 4)}${r(gi.id, 7)}${" ".repeat(7)}${l(`MIG ${p.name}`, 19)}${r(p.id, 3)}${r(ci.id, 10)}`;
        const tail = placement ? `${" ".repeat(10)}${l(`${ci.start}:${ci.size}`, 8)}|` : "     |";
        out.push(head + tail, border(width));
      }
    }
  }
  return out;
}

export function formatLcip(views: readonly GpuView[], only: (gi: SimGi) => boolean): string[] {
  const width = 88;
  const out = [
    border(width),
    title("Compute instance profiles:", width),
    "| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
    "|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
    "|         ID                                                          CE    JPEG       |",
    rule(width),
  ];
  for (const v of views) {
    for (const gi of listingOrder(v).filter(only)) {
      const gp = giProfileOf(v, gi);
      for (const cp of gp.ciProfiles) {
        const free = freeCiCount(cp, gi.cis, gp.computeSlices);
        out.push(
          `|${r(v.gpu.index, 4)}${r(gi.id, 7)}${" ".repeat(7)}${l(`MIG ${cp.name}`, 19)}${r(cp.id, 3)}${cp.isDefault ? "*" : " "}` +
            `${r(`${free}/${cp.instances}`, 8)}${r(cp.sm, 13)}${r(gp.dec, 9)}${r(gp.enc, 6)}${r(gp.ofa, 6)}   |`,
          `|${" ".repeat(62)}${r(gp.ce, 9)}${r(gp.jpeg, 6)}${" ".repeat(9)}|`,
          border(width),
        );
      }
    }
  }
  return out;
}
