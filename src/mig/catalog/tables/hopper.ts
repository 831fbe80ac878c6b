// GPU-instance profiles of the Hopper products (mig-reference.md §2). All share the H100
// placements (`-lgipp` captured on H100 SXM, PCIe and NVL; assumed for GH200 and H200).

import type { GiProfileSpec } from "../types.js";
import { changedAt, fromRows, S0, S1, S2, S2G, S4 } from "./rows.js";

// H100 80GB HBM3 / SXM5 (132 SM): identical in 580.173.02 (PRICKLE), R575 (STACKHPC) and an
// unknown-driver capture (IDX-8225626544); the GUIDE agrees.
// biome-ignore format: aligned with mig-reference.md §2
export const H100_SXM_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB      SM   DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.10gb",      0,   1, 1, "9.75",  16,  1,  0,  1, 1,  0,  7,  S1,    0],
  [20, "1g.10gb+me",   7,   1, 1, "9.75",  16,  1,  0,  1, 1,  1,  1,  S1,    0],
  [15, "1g.20gb",      9,   1, 2, "19.62", 26,  1,  0,  1, 1,  0,  4,  S2,    7],
  [14, "2g.20gb",      1,   2, 2, "19.62", 32,  2,  0,  2, 2,  0,  3,  S2G,   1],
  [9,  "3g.40gb",      2,   3, 4, "39.50", 60,  3,  0,  3, 3,  0,  2,  S4,    2],
  [5,  "4g.40gb",      3,   4, 4, "39.50", 64,  4,  0,  4, 4,  0,  1,  S0,    3],
  [0,  "7g.80gb",      4,   7, 8, "79.25", 132, 7,  0,  8, 7,  1,  1,  S0,    4],
]);

// H100 PCIe 80GB (114 SM), 525.125.06 (SCW). Note 1g.20gb has SM 14 here against 26 on SXM.
// biome-ignore format: aligned with mig-reference.md §2
export const H100_PCIE_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB      SM   DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.10gb",      0,   1, 1, "9.62",  14,  1,  0,  1, 1,  0,  7,  S1,    0],
  [20, "1g.10gb+me",   7,   1, 1, "9.62",  14,  1,  0,  1, 1,  1,  1,  S1,    0],
  [15, "1g.20gb",      9,   1, 2, "19.50", 14,  1,  0,  1, 1,  0,  4,  S2,    7],
  [14, "2g.20gb",      1,   2, 2, "19.50", 30,  2,  0,  2, 2,  0,  3,  S2G,   1],
  [9,  "3g.40gb",      2,   3, 4, "39.25", 46,  3,  0,  3, 3,  0,  2,  S4,    2],
  [5,  "4g.40gb",      3,   4, 4, "39.25", 62,  4,  0,  4, 4,  0,  1,  S0,    3],
  [0,  "7g.80gb",      4,   7, 8, "79.00", 114, 7,  0,  8, 7,  1,  1,  S0,    4],
]);

// H100 NVL 94GB. 550.127.06 was a vGPU host and reports less memory than 560.35.03 bare metal
// (AZ-H100NVL vs IDX-59145491406). Whether the driver or the vGPU host causes it is unknown;
// it is modelled as a change at R560 so that both captures are reproduced.
const NVL = (old: string, now: string) => changedAt("560", old, now);
// biome-ignore format: aligned with mig-reference.md §2
export const H100_NVL_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB                       SM   DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.12gb",      0,   1, 1, NVL("10.62", "10.75"),    16,  1,  0,  1, 1,  0,  7,  S1,    0],
  [20, "1g.12gb+me",   7,   1, 1, NVL("10.62", "10.75"),    16,  1,  0,  1, 1,  1,  1,  S1,    0],
  [15, "1g.24gb",      9,   1, 2, NVL("21.50", "21.62"),    26,  1,  0,  1, 1,  0,  4,  S2,    7],
  [14, "2g.24gb",      1,   2, 2, NVL("21.50", "21.62"),    32,  2,  0,  2, 2,  0,  3,  S2G,   1],
  [9,  "3g.47gb",      2,   3, 4, NVL("46.12", "46.38"),    60,  3,  0,  3, 3,  0,  2,  S4,    2],
  [5,  "4g.47gb",      3,   4, 4, NVL("46.12", "46.38"),    64,  4,  0,  4, 4,  0,  1,  S0,    3],
  [0,  "7g.94gb",      4,   7, 8, NVL("92.62", "93.12"),    132, 7,  0,  8, 7,  1,  1,  S0,    4],
]);

// GH200 (H100 on GH200 96GB), 550.54.15 (GH200LOG): same IDs, SM, CE and engines as H100 SXM.
// biome-ignore format: aligned with mig-reference.md §2
export const GH200_96GB_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB      SM   DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.12gb",      0,   1, 1, "11.00", 16,  1,  0,  1, 1,  0,  7,  S1,    0],
  [20, "1g.12gb+me",   7,   1, 1, "11.00", 16,  1,  0,  1, 1,  1,  1,  S1,    0],
  [15, "1g.24gb",      9,   1, 2, "23.00", 26,  1,  0,  1, 1,  0,  4,  S2,    7],
  [14, "2g.24gb",      1,   2, 2, "23.00", 32,  2,  0,  2, 2,  0,  3,  S2G,   1],
  [9,  "3g.48gb",      2,   3, 4, "46.50", 60,  3,  0,  3, 3,  0,  2,  S4,    2],
  [5,  "4g.48gb",      3,   4, 4, "46.50", 64,  4,  0,  4, 4,  0,  1,  S0,    3],
  [0,  "7g.96gb",      4,   7, 8, "93.00", 132, 7,  0,  8, 7,  1,  1,  S0,    4],
]);

// H200 141GB: 580.173.02 (PRICKLE) against a 2024 driver (mig-parted #120, excerpt): 1g.35gb
// 32.25→32.50, 3g/4g 69.50→69.75, 7g 139.75→140.00. The 2024 issue predates R560, so the change
// is put at R560 (the boundary unverified). 580.159.04's -lgip on a real H200 (fixtures/captures,
// 4 Dec 2026) lists exactly the newer rows (test/nvsmi/h200-device.test.ts).
const H200 = (old: string, now: string) => changedAt("560", old, now);
// biome-ignore format: aligned with mig-reference.md §2
export const H200_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB                       SM   DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.18gb",      0,   1, 1, "16.00",                  16,  1,  0,  1, 1,  0,  7,  S1,    0],
  [20, "1g.18gb+me",   7,   1, 1, "16.00",                  16,  1,  0,  1, 1,  1,  1,  S1,    0],
  [15, "1g.35gb",      9,   1, 2, H200("32.25", "32.50"),   26,  1,  0,  1, 1,  0,  4,  S2,    7],
  [14, "2g.35gb",      1,   2, 2, H200("32.25", "32.50"),   32,  2,  0,  2, 2,  0,  3,  S2G,   1],
  [9,  "3g.71gb",      2,   3, 4, H200("69.50", "69.75"),   60,  3,  0,  3, 3,  0,  2,  S4,    2],
  [5,  "4g.71gb",      3,   4, 4, H200("69.50", "69.75"),   64,  4,  0,  4, 4,  0,  1,  S0,    3],
  [0,  "7g.141gb",     4,   7, 8, H200("139.75", "140.00"), 132, 7,  0,  8, 7,  1,  1,  S0,    4],
]);
