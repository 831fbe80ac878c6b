// GPU-instance profiles of the Ampere products, copied from mig-reference.md §2 (the columns of
// `-lgip`, the placements of `-lgipp`). Rows are in the order the driver lists them.
// NVML index: 1_SLICE=0, 2=1, 3=2, 4=3, 7=4, 1_SLICE_REV1 (+me)=7, 2_SLICE_REV1=8, 1_SLICE_REV2=9.

import type { GiProfileSpec } from "../types.js";
import { changedAt, fromRows, S0, S1, S2, S2G, S4 } from "./rows.js";

// A30: 4 memory slices, 4 compute slices. Sources: lgip 535.183.01 (IDX-25510043945), pre-R525
// lgip/lgipp (SUMMER). GUIDE: 1g.6gb+me arrived in R470, 2g.12gb+me in R525. The GUIDE says
// 1g.6gb has 0 NVDECs; both real captures show DEC 1, which is kept. 4g.24gb is 23.50 on a
// pre-R525 capture and 23.44 on 535; the change point is unknown and put at R525, where the
// A100 sizes changed too.
// biome-ignore format: aligned with mig-reference.md §2
export const A30_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB                                 SM DEC ENC CE JPG OFA inst starts        CI since
  [14, "1g.6gb",       0,   1, 1, "5.81",                             14, 1,  0,  1, 0,  0,  4,  [0, 1, 2, 3], 0],
  [21, "1g.6gb+me",    7,   1, 1, "5.81",                             14, 1,  0,  1, 1,  1,  1,  [0, 1, 2, 3], 0, "470"],
  [5,  "2g.12gb",      1,   2, 2, "11.69",                            28, 2,  0,  2, 0,  0,  2,  [0, 2],       1],
  [6,  "2g.12gb+me",   8,   2, 2, "11.69",                            28, 2,  0,  2, 1,  1,  1,  [0, 2],       1, "525"],
  [0,  "4g.24gb",      3,   4, 4, changedAt("525", "23.50", "23.44"), 56, 4,  0,  4, 1,  1,  1,  [0],          3],
]);

// A100-40GB (SXM4 and PCIe). Sources: pre-R525 lgip/lgipp (IDX-42708883739), the R525+ GUIDE
// example (SEAN copy). Sizes shrank at R525: 2g 9.75→9.62, 3g/4g 19.62→19.50, 7g 39.50→39.25.
// ID 15 (1_SLICE_REV2) came with R525 / NVML 12.0; its whole-GI CI is CI profile 7 (§1).
// The 7g default CI profile appears in no capture; NVML's enum value 7_SLICE=4 is used.
// biome-ignore format: aligned with mig-reference.md §2
export const A100_40GB_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB                                 SM DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.5gb",       0,   1, 1, "4.75",                             14, 0,  0,  1, 0,  0,  7,  S1,    0],
  [20, "1g.5gb+me",    7,   1, 1, "4.75",                             14, 1,  0,  1, 1,  1,  1,  S1,    0, "470"],
  [15, "1g.10gb",      9,   1, 2, "9.62",                             14, 1,  0,  1, 0,  0,  4,  S2,    7, "525"],
  [14, "2g.10gb",      1,   2, 2, changedAt("525", "9.75", "9.62"),   28, 1,  0,  2, 0,  0,  3,  S2G,   1],
  [9,  "3g.20gb",      2,   3, 4, changedAt("525", "19.62", "19.50"), 42, 2,  0,  3, 0,  0,  2,  S4,    2],
  [5,  "4g.20gb",      3,   4, 4, changedAt("525", "19.62", "19.50"), 56, 2,  0,  4, 0,  0,  1,  S0,    3],
  [0,  "7g.40gb",      4,   7, 8, changedAt("525", "39.50", "39.25"), 98, 5,  0,  7, 1,  1,  1,  S0,    4],
]);

// A100-80GB (SXM4 and PCIe). Source: lgip 515.86.01 (IDX-37126368659). The 1g.20gb row (ID 15,
// R525+) comes from one unverified source. An older HGX capture with no stated driver showed
// 7g.80gb as 78.75; the 515 value is used for every driver.
// biome-ignore format: aligned with mig-reference.md §2
export const A100_80GB_PROFILES: readonly GiProfileSpec[] = fromRows([
  // ID  name          NVML cs ms GiB     SM DEC ENC CE JPG OFA inst starts CI since
  [19, "1g.10gb",      0,   1, 1, "9.50",  14, 0,  0,  1, 0,  0,  7,  S1,    0],
  [20, "1g.10gb+me",   7,   1, 1, "9.50",  14, 1,  0,  1, 1,  1,  1,  S1,    0, "470"],
  [15, "1g.20gb",      9,   1, 2, "19.50", 14, 1,  0,  1, 0,  0,  4,  S2,    7, "525"],
  [14, "2g.20gb",      1,   2, 2, "19.50", 28, 1,  0,  2, 0,  0,  3,  S2G,   1],
  [9,  "3g.40gb",      2,   3, 4, "39.25", 42, 2,  0,  3, 0,  0,  2,  S4,    2],
  [5,  "4g.40gb",      3,   4, 4, "39.25", 56, 2,  0,  4, 0,  0,  1,  S0,    3],
  [0,  "7g.80gb",      4,   7, 8, "79.00", 98, 5,  0,  7, 1,  1,  1,  S0,    4],
]);
