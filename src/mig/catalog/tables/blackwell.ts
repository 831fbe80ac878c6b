// GPU-instance profiles of B200 180GB. The reference is PARTIAL here (mig-reference.md §2):
// - captured (mig-parted PR #187, March 2025 driver): 1g.23gb and +me 20.50 GiB, SM 18, CE 2;
//   1g.45gb 44.25 GiB SM 30 CE 2; 2g.45gb 44.25 GiB SM 36 DEC 2 CE 4 JPEG 2.
// - The January 2025 pre-release driver printed 1g.23gb as 22.00 and had no 4g.90gb; it predates
//   the minimum B200 driver (570.133.20, GUIDE-620), so it is not catalogued.
// - 3g.90gb, 4g.90gb and 7g.180gb were never captured. Conservatively derived, and to be replaced
//   by a capture: memory follows the H100 pattern (each doubling adds 0.25 GiB to twice the
//   smaller size: 2×44.25+0.25, 2×88.75+0.25); SM = 18 per compute slice, 7g all 148 SMs; DEC
//   and JPEG = compute slices as on H100; CE from the GUIDE's fractions table (6, 8, 16), which
//   is known to be wrong for 2g.45gb, so treat these as placeholders.
// - Placements: no B200 -lgipp exists; the H100 layout is assumed.

import type { GiProfileSpec } from "../types.js";
import { fromRows, S0, S1, S2, S2G, S4 } from "./rows.js";

// biome-ignore format: aligned with mig-reference.md §2
export const B200_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB       SM   DEC ENC CE  JPG OFA inst starts CI since
  [19, "1g.23gb",      0,   1, 1, "20.50",  18,  1,  0,  2,  1,  0,  7,  S1,    0],
  [20, "1g.23gb+me",   7,   1, 1, "20.50",  18,  1,  0,  2,  1,  1,  1,  S1,    0],
  [15, "1g.45gb",      9,   1, 2, "44.25",  30,  1,  0,  2,  1,  0,  4,  S2,    7],
  [14, "2g.45gb",      1,   2, 2, "44.25",  36,  2,  0,  4,  2,  0,  3,  S2G,   1],
  [9,  "3g.90gb",      2,   3, 4, "88.75",  54,  3,  0,  6,  3,  0,  2,  S4,    2],
  [5,  "4g.90gb",      3,   4, 4, "88.75",  72,  4,  0,  8,  4,  0,  1,  S0,    3],
  [0,  "7g.180gb",     4,   7, 8, "177.75", 148, 7,  0,  16, 7,  1,  1,  S0,    4],
]);
