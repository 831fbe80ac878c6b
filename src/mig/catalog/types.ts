// Types of the built-in MIG profile catalogue. The raw tables (`*Spec`) are written once per
// product with driver-dependent values; `catalogFor` resolves them for one driver into the
// plain-data `Catalog` that the planner, `slicecheck plan` and the simulator use.

import type { DriverValue } from "./driver.js";

export type ProductKey =
  | "A30"
  | "A100-40GB"
  | "A100-80GB"
  | "H100-80GB"
  | "H100-PCIE"
  | "H100-NVL"
  | "GH200-96GB"
  | "H200"
  | "B200"
  | "RTX-PRO-6000";

export type Architecture = "ampere" | "hopper" | "blackwell";

/** One board (form factor) of a product: what nvidia-smi names it and how it is wired. */
export interface BoardFacts {
  /** Short key, unique within the product: "SXM4", "PCIe", … */
  key: string;
  /** The name nvidia-smi prints from the R515 era on (`NVIDIA A100-SXM4-40GB`). */
  smiName: string;
  /** PCI device id as mig-parted writes it: 0x<device><vendor>, e.g. 0x233010DE. */
  pciId: string;
  powerCapW: number;
  /** Framebuffer total as `nvidia-smi` prints it (`81559MiB`), per driver where it changed. */
  memoryTotalMiB: DriverValue<number>;
}

export interface ProductFacts {
  key: ProductKey;
  architecture: Architecture;
  /** Memory slices a GI placement counts in (8; 4 on A30; 12 placement units on RTX PRO 6000). */
  memorySlices: 8 | 4 | 12;
  /** Compute slices (7; 4 on A30). */
  computeSlices: 7 | 4;
  smCount: number;
  /** Framebuffer of the default board at the newest catalogued driver. */
  memoryMiB: number;
  /** Boards, default first. */
  boards: readonly BoardFacts[];
  /** Other spellings `resolveProduct` accepts (case-insensitive). */
  aliases: readonly string[];
  /**
   * Ampere stores MIG mode in the InfoROM and needs a GPU reset to apply it; Hopper and later
   * apply it at once when no client holds the GPU, and lose it at reboot (mig-reference.md §7).
   */
  modeChangeNeedsReset: boolean;
  /** Minimum driver with MIG for this product (GUIDE-620 table). */
  minDriver: string;
  /** BAR1 size of one memory slice as the `MIG devices` table prints it, see `bar1MiB`. */
  bar1PerSliceMiB: number;
  /** From R580 the table prints a different, exact BAR1 share; known only where captured. */
  bar1PerSliceMiBR580?: number;
  /** Set where the reference is incomplete for this product; says what is derived. */
  partial?: string;
}

/** One GPU-instance profile as written in the tables, before driver resolution. */
export interface GiProfileSpec {
  id: number;
  /** The name nvidia-smi prints after `MIG ` (`1g.10gb+me`). */
  name: string;
  /**
   * NVML's profile enum (1_SLICE=0, 2=1, 3=2, 4=3, 7=4, 1_SLICE_REV1=7, 2_SLICE_REV1=8,
   * 1_SLICE_REV2=9). `-lgi`, `-lci`, `-dgi` and `-dci` walk GIs grouped by it.
   */
  nvmlIndex: number;
  computeSlices: number;
  memorySlices: number;
  /** `Memory GiB` exactly as `-lgip` prints it. */
  memoryGiB: DriverValue<string>;
  sm: number;
  dec: number;
  enc: number;
  ce: number;
  jpeg: number;
  ofa: number;
  /** The `Total` of `Instances Free/Total`. */
  instances: number;
  /** Allowed start memory slices; the size is `memorySlices`. */
  starts: readonly number[];
  /** First driver version offering the profile; absent when it came with MIG itself. */
  since?: string;
  /** CI profile ID of the CI covering the whole GI (`-C`, `-cci` without a profile). */
  defaultCiProfileId: number;
}

export interface Placement {
  start: number;
  size: number;
}

export interface CiProfile {
  id: number;
  /** `1c.3g.40gb`, or the GI's name without `+me` for the full-GI profile. */
  name: string;
  computeSlices: number;
  sm: number;
  /** The `Total` of `Instances Free/Total` in `-lcip`. */
  instances: number;
  starts: readonly number[];
  size: number;
  /** Marked `*` in `-lcip`: the one `-C` and a bare `-cci` create. */
  isDefault: boolean;
}

export interface GiProfile {
  id: number;
  name: string;
  nvmlIndex: number;
  computeSlices: number;
  memorySlices: number;
  memoryGiB: string;
  memoryMiB: number;
  sm: number;
  dec: number;
  enc: number;
  ce: number;
  jpeg: number;
  ofa: number;
  instances: number;
  placements: readonly Placement[];
  defaultCiProfileId: number;
  ciProfiles: readonly CiProfile[];
}

export interface CatalogRules {
  /**
   * Profile ID pairs that cannot coexist on one GPU at this driver. Before R510 a 4-memory-slice
   * 4-compute profile and a 4-memory-slice 3-compute one (4g.20gb + 3g.20gb) were refused.
   */
  forbiddenPairs: readonly (readonly [number, number])[];
}

export interface Catalog {
  product: ProductKey;
  driver: string;
  facts: ProductFacts;
  /** In the order the driver lists them (`-lgip`, `-lgipp`). */
  giProfiles: readonly GiProfile[];
  rules: CatalogRules;
}
