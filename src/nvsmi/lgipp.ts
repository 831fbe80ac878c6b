// `nvidia-smi mig -lgipp`: one line per profile, `GPU  0 Profile ID 19 Placements: {0,1,…}:1`
// (`Placement :` when there is a single start). The start counts memory slices, the size is
// the number of memory slices an instance occupies.

import { parseNotice } from "./boxlisting.js";
import { parseError, significantLines } from "./text.js";
import type { LgippResult, ListingNotice } from "./types.js";

const KIND = "lgipp";

// The optional name covers drivers that print it after the ID, with or without parentheses.
const LINE =
  /^GPU\s+(\d+)\s+Profile ID\s+(\d+)(?:\s+\(?(?:MIG\s+)?([0-9][\w.+-]*)\)?)?\s+Placements?\s*:\s*\{(\d+(?:,\s*\d+)*)?\}:(\d+)$/;

export function parseLgipp(text: string): LgippResult {
  const gpus: LgippResult["gpus"] = [];
  const notices: ListingNotice[] = [];
  for (const line of significantLines(text)) {
    const t = line.text.trim();
    const notice = parseNotice(t);
    if (notice) {
      notices.push(notice);
      continue;
    }
    const m = LINE.exec(t);
    if (!m) {
      throw parseError(
        KIND,
        line.no,
        "'GPU <n> Profile ID <id> Placements: {…}:<size>'",
        line.text,
      );
    }
    const index = Number(m[1]);
    let gpu = gpus.find((g) => g.index === index);
    if (!gpu) {
      gpu = { index, placements: [] };
      gpus.push(gpu);
    }
    const starts = m[4] === undefined ? [] : m[4].split(",").map((s) => Number(s.trim()));
    const placement = { profileId: Number(m[2]), starts, size: Number(m[5]) };
    gpu.placements.push(m[3] === undefined ? placement : { ...placement, name: m[3] });
  }
  return notices.length > 0 ? { gpus, notices } : { gpus };
}
