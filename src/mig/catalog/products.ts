// Product facts: names, PCI ids, sizes and behaviour that do not depend on a profile. Sources
// are the mig-reference.md keys (MP for PCI ids, GUIDE-620 for minimum drivers, captures for
// names, power caps and framebuffer totals as nvidia-smi prints them).

import type { ProductFacts, ProductKey } from "./types.js";

export const PRODUCT_FACTS: Readonly<Record<ProductKey, ProductFacts>> = {
  A30: {
    key: "A30",
    architecture: "ampere",
    memorySlices: 4,
    computeSlices: 4,
    smCount: 56,
    memoryMiB: 24576,
    boards: [
      {
        key: "PCIe",
        smiName: "NVIDIA A30",
        pciId: "0x20B710DE",
        powerCapW: 165,
        memoryTotalMiB: 24576,
      },
    ],
    aliases: ["A30-24GB"],
    modeChangeNeedsReset: true,
    minDriver: "460.73.01",
    // 1g.6gb shows BAR1 8191 MiB and 2g.12gb 16383 MiB on 535.183.01.
    bar1PerSliceMiB: 8192,
  },
  "A100-40GB": {
    key: "A100-40GB",
    architecture: "ampere",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 108,
    memoryMiB: 40960,
    boards: [
      {
        key: "SXM4",
        smiName: "NVIDIA A100-SXM4-40GB",
        pciId: "0x20B010DE",
        powerCapW: 400,
        // 40537 MiB on 450.80.02 (CND capture), 40960 MiB on 535 (A100-PCIE-40GB). Where it
        // changed is unknown; the old value is kept through the R470 branch.
        memoryTotalMiB: [
          { from: "0", value: 40537 },
          { from: "515", value: 40960 },
        ],
      },
      {
        key: "PCIe",
        smiName: "NVIDIA A100-PCIE-40GB",
        pciId: "0x20F110DE",
        powerCapW: 250,
        memoryTotalMiB: [
          { from: "0", value: 40537 },
          { from: "515", value: 40960 },
        ],
      },
      // mig-parted lists these two device ids with the same profiles (A100 PG506 / A800 40GB).
      {
        key: "SXM4-alt",
        smiName: "NVIDIA A100-SXM4-40GB",
        pciId: "0x20B110DE",
        powerCapW: 400,
        memoryTotalMiB: 40960,
      },
      {
        key: "A800-40GB",
        smiName: "NVIDIA A800 40GB PCIe",
        pciId: "0x20F610DE",
        powerCapW: 250,
        memoryTotalMiB: 40960,
      },
    ],
    aliases: ["A100", "A100-SXM4-40GB", "A100-PCIE-40GB", "A100-40G"],
    modeChangeNeedsReset: true,
    minDriver: "450.80.02",
    // 1g.5gb shows BAR1 8191 MiB (NVIDIA/libcudacxx#224, R470 era).
    bar1PerSliceMiB: 8192,
  },
  "A100-80GB": {
    key: "A100-80GB",
    architecture: "ampere",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 108,
    memoryMiB: 81920,
    boards: [
      {
        key: "SXM4",
        smiName: "NVIDIA A100-SXM4-80GB",
        pciId: "0x20B210DE",
        powerCapW: 400,
        memoryTotalMiB: 81920,
      },
      {
        key: "PCIe",
        smiName: "NVIDIA A100 80GB PCIe",
        pciId: "0x20B510DE",
        powerCapW: 300,
        memoryTotalMiB: 81920,
      },
      {
        key: "A800-SXM4",
        smiName: "NVIDIA A800-SXM4-80GB",
        pciId: "0x20F310DE",
        powerCapW: 400,
        memoryTotalMiB: 81920,
      },
      {
        key: "A800-PCIe",
        smiName: "NVIDIA A800 80GB PCIe",
        pciId: "0x20F510DE",
        powerCapW: 300,
        memoryTotalMiB: 81920,
      },
    ],
    aliases: ["A100-SXM4-80GB", "A100-80G"],
    modeChangeNeedsReset: true,
    minDriver: "450.80.02",
    // 3g.40gb shows BAR1 65535 MiB on 515.86.01 and 1g.10gb 16383 MiB on 535.
    bar1PerSliceMiB: 16384,
  },
  "H100-80GB": {
    key: "H100-80GB",
    architecture: "hopper",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 132,
    memoryMiB: 81559,
    boards: [
      {
        key: "SXM5",
        smiName: "NVIDIA H100 80GB HBM3",
        pciId: "0x233010DE",
        powerCapW: 700,
        memoryTotalMiB: 81559,
      },
      {
        key: "H800",
        smiName: "NVIDIA H800",
        pciId: "0x232410DE",
        powerCapW: 700,
        memoryTotalMiB: 81559,
      },
    ],
    aliases: ["H100", "H100-SXM", "H100-SXM5", "H100-SXM5-80GB", "H100-80GB-HBM3"],
    modeChangeNeedsReset: false,
    minDriver: "525.85.12",
    bar1PerSliceMiB: 16384,
    // 580.173.02: 1g.10gb 6185 MiB, 3g.40gb 24740 MiB (PRICKLE).
    bar1PerSliceMiBR580: 6185,
  },
  "H100-PCIE": {
    key: "H100-PCIE",
    architecture: "hopper",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 114,
    memoryMiB: 81559,
    boards: [
      {
        key: "PCIe",
        smiName: "NVIDIA H100 PCIe",
        pciId: "0x233110DE",
        powerCapW: 350,
        memoryTotalMiB: 81559,
      },
      {
        key: "H800-PCIe",
        smiName: "NVIDIA H800 PCIe",
        pciId: "0x232210DE",
        powerCapW: 350,
        memoryTotalMiB: 81559,
      },
    ],
    aliases: ["H100-PCIe-80GB"],
    modeChangeNeedsReset: false,
    minDriver: "525.85.12",
    bar1PerSliceMiB: 16384,
  },
  "H100-NVL": {
    key: "H100-NVL",
    architecture: "hopper",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 132,
    memoryMiB: 95830,
    boards: [
      {
        key: "NVL",
        smiName: "NVIDIA H100 NVL",
        pciId: "0x232110DE",
        powerCapW: 400,
        memoryTotalMiB: 95830,
      },
      {
        key: "H800-NVL",
        smiName: "NVIDIA H800 NVL",
        pciId: "0x233A10DE",
        powerCapW: 400,
        memoryTotalMiB: 95830,
      },
    ],
    aliases: ["H100-NVL-94GB", "H100 NVL"],
    modeChangeNeedsReset: false,
    minDriver: "535.54.03",
    bar1PerSliceMiB: 16384,
  },
  "GH200-96GB": {
    key: "GH200-96GB",
    architecture: "hopper",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 132,
    memoryMiB: 97871,
    boards: [
      {
        key: "GH200",
        smiName: "NVIDIA GH200 480GB",
        pciId: "0x234210DE",
        powerCapW: 900,
        memoryTotalMiB: 97871,
      },
    ],
    aliases: ["GH200", "GH200-480GB"],
    modeChangeNeedsReset: false,
    minDriver: "550.54.15",
    bar1PerSliceMiB: 16384,
    partial:
      "GH200 96GB: -lgip values from one 550.54.15 session (GH200LOG); placements, BAR1 and the " +
      "framebuffer total are assumed equal to H100 SXM / other GH200 hosts (unverified).",
  },
  H200: {
    key: "H200",
    architecture: "hopper",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 132,
    memoryMiB: 143771,
    boards: [
      {
        key: "SXM",
        smiName: "NVIDIA H200",
        pciId: "0x233510DE",
        powerCapW: 700,
        memoryTotalMiB: 143771,
      },
      {
        key: "NVL",
        smiName: "NVIDIA H200 NVL",
        pciId: "0x233B10DE",
        powerCapW: 600,
        memoryTotalMiB: 143771,
      },
    ],
    aliases: ["H200-141GB", "H200-SXM"],
    modeChangeNeedsReset: false,
    minDriver: "550.90.07",
    bar1PerSliceMiB: 16384,
    // 580.173.02: 1g.18gb shows 14809 MiB (PRICKLE h200-mig smi.txt).
    bar1PerSliceMiBR580: 14809,
    partial: "H200: no -lgipp capture; placements are assumed equal to H100 (derived).",
  },
  B200: {
    key: "B200",
    architecture: "blackwell",
    memorySlices: 8,
    computeSlices: 7,
    smCount: 148,
    memoryMiB: 183359,
    boards: [
      {
        key: "SXM6",
        smiName: "NVIDIA B200",
        pciId: "0x290110DE",
        powerCapW: 1000,
        memoryTotalMiB: 183359,
      },
    ],
    aliases: ["B200-180GB"],
    modeChangeNeedsReset: false,
    minDriver: "570.133.20",
    bar1PerSliceMiB: 16384,
    partial:
      "B200: only 1g.23gb(+me), 1g.45gb and 2g.45gb were captured (mig-parted PRs, excerpts). " +
      "3g.90gb, 4g.90gb and 7g.180gb memory, SM and engine counts are derived from the H100 " +
      "pattern and the GUIDE's fractions; placements are assumed equal to H100.",
  },
  "RTX-PRO-6000": {
    key: "RTX-PRO-6000",
    architecture: "blackwell",
    memorySlices: 12,
    computeSlices: 4,
    smCount: 188,
    // 97887 MiB in the Max-Q capture (580.105.08), akash-network/provider-configs#79
    // (580.126.20) and the Server Edition blog post (610.43.02).
    memoryMiB: 97887,
    boards: [
      {
        // 0x2BB510DE: bottlerocket-os/bottlerocket-kernel-kit#300 (--query-gpu=pci.device_id).
        // Power cap: not in any capture; 600 W is NVIDIA's figure for the Server Edition.
        key: "Server",
        smiName: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        pciId: "0x2BB510DE",
        powerCapW: 600,
        memoryTotalMiB: 97887,
      },
      {
        // akash-network/provider-configs#79: name, 97887 MiB, 0x2BB410DE; 300 W in the
        // Max-Q capture (IDX-40638937359).
        key: "Max-Q",
        smiName: "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        pciId: "0x2BB410DE",
        powerCapW: 300,
        memoryTotalMiB: 97887,
      },
      {
        // Dr-Noob/gpufetch#62 (device id 0x2BB1 with this name); 600.00 W power.limit in
        // local-inference-lab/rtx6kpro#92 (610.43.02).
        key: "Workstation",
        smiName: "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        pciId: "0x2BB110DE",
        powerCapW: 600,
        memoryTotalMiB: 97887,
      },
    ],
    aliases: ["RTX PRO 6000", "RTX-PRO-6000-96GB", "RTX PRO 6000 Blackwell", "RTXPRO6000"],
    modeChangeNeedsReset: false,
    minDriver: "575.51.03",
    // Only the R580 BAR1 share is known (8327 MiB for a 1g GI of 3 units, Max-Q 580.105.08);
    // before R580 the per-unit share is assumed the same.
    bar1PerSliceMiB: 2776,
    bar1PerSliceMiBR580: 8327 / 3,
    partial:
      "RTX PRO 6000: -lgip/-lgipp captured on the Server Edition (610.43.02) and -lgip on the " +
      "Max-Q (580.105.08); Workstation Edition values are assumed equal (same GUIDE table). " +
      "BAR1 of 2g/4g GIs, the CI profiles inside a GI, the Server power cap and the R575 output " +
      "layout are derived.",
  },
};
