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
import { changedAt, fromRows, S0, S1, S2, S2G, S4 } from "./rows.js";

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

// RTX PRO 6000 Blackwell (Server, Workstation and Max-Q Workstation Editions, 96GB; GB202, 188
// SM; MIG from R575 ≥ 575.51.03, GUIDE). 4 compute slices on a grid of 12 placement units
// (`-lgipp`: 1g {0,3,6,9}:3, 2g {0,6}:6, 4g {0}:12), so a 1g GI is `start:3` in `-lgi`. Every
// plain profile comes with a +gfx (graphics), -me (no media engines) and, for 1g and 2g, a
// +me.all (all 4 NVDEC/NVENC/JPEG) variant. Sources, all verbatim in fixtures/captures:
// - `-lgip` and `-lgipp`, Server Edition, 610.43.02: public file id 55594212068 (blog post
//   "Slicing GPUs in Kubernetes with NVIDIA MIG"); `-lgi` there shows GI IDs 3..6 at 0:3..9:3 and
//   GI 1 at 0:6 (the tree numbering of 4 slices).
// - `-lgip`, Max-Q Workstation Edition, 580.105.08: public file id 40638937359; the same rows
//   except 4g.96gb(+gfx) at 95.00 GiB, and the MIG devices table shows 24192 MiB and BAR1
//   8327 MiB for a 1g.24gb GI.
// - GUIDE "GPU Instance Profiles on RTX PRO 6000" (Table 11): the same profiles, counts and CEs.
// - 23.62 GiB is also in GoogleCloudPlatform/container-engine-accelerators#564 and
//   bottlerocket-os/bottlerocket-kernel-kit#300 (drivers not stated); bigstack-oss/cubecos#312
//   shows 23.12 on a driver it does not state, so it is not catalogued.
// Derived: 4g.96gb is 95.00 on the R580 capture and 95.12 on the R610 one; whether the driver
// or the board makes the difference is unknown, and it is modelled as a change at R610.
const RTX_1G = [0, 3, 6, 9] as const;
const RTX_2G = [0, 6] as const;
const RTX_4G = [0] as const;
const RTX_WHOLE = changedAt("610", "95.00", "95.12");
// biome-ignore format: aligned with the -lgip capture
export const RTX_PRO_6000_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name              NVML cs ms  GiB        SM   DEC ENC CE JPG OFA inst starts  CI
  [14, "1g.24gb",          0,   1, 3,  "23.62",   46,  1,  1,  1, 1,  0,  4,  RTX_1G, 0],
  [21, "1g.24gb+me",       7,   1, 3,  "23.62",   46,  1,  1,  1, 1,  1,  1,  RTX_1G, 0],
  [47, "1g.24gb+gfx",      10,  1, 3,  "23.62",   46,  1,  1,  1, 1,  0,  4,  RTX_1G, 0],
  [65, "1g.24gb+me.all",   15,  1, 3,  "23.62",   46,  4,  4,  1, 4,  1,  1,  RTX_1G, 0],
  [67, "1g.24gb-me",       13,  1, 3,  "23.62",   46,  0,  0,  1, 0,  0,  4,  RTX_1G, 0],
  [5,  "2g.48gb",          1,   2, 6,  "47.38",   94,  2,  2,  2, 2,  0,  2,  RTX_2G, 1],
  [35, "2g.48gb+gfx",      11,  2, 6,  "47.38",   94,  2,  2,  2, 2,  0,  2,  RTX_2G, 1],
  [64, "2g.48gb+me.all",   16,  2, 6,  "47.38",   94,  4,  4,  2, 4,  1,  1,  RTX_2G, 1],
  [66, "2g.48gb-me",       14,  2, 6,  "47.38",   94,  0,  0,  2, 0,  0,  2,  RTX_2G, 1],
  [0,  "4g.96gb",          3,   4, 12, RTX_WHOLE, 188, 4,  4,  4, 4,  1,  1,  RTX_4G, 3],
  [32, "4g.96gb+gfx",      12,  4, 12, RTX_WHOLE, 188, 4,  4,  4, 4,  1,  1,  RTX_4G, 3],
]);
