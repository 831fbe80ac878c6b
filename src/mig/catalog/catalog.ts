// The catalogue API: which products exist, which drivers are catalogued for each, and the
// profiles a product offers at one driver. Pure: no I/O, plain data out.

import { SlicecheckError } from "../../errors.js";
import { didYouMean } from "../../util/closest.js";
import { ciProfilesFor } from "./compute.js";
import { compareDrivers, driverAtLeast, parseDriver, valueAt } from "./driver.js";
import { mibFromGiB } from "./memory.js";
import { PRODUCT_FACTS } from "./products.js";
import { A30_PROFILES, A100_40GB_PROFILES, A100_80GB_PROFILES } from "./tables/ampere.js";
import { B200_PROFILES, RTX_PRO_6000_PROFILES } from "./tables/blackwell.js";
import {
  GH200_96GB_PROFILES,
  H100_NVL_PROFILES,
  H100_PCIE_PROFILES,
  H100_SXM_PROFILES,
  H200_PROFILES,
} from "./tables/hopper.js";
import type {
  BoardFacts,
  Catalog,
  CiProfile,
  GiProfile,
  GiProfileSpec,
  ProductFacts,
  ProductKey,
} from "./types.js";

const TABLES: Readonly<Record<ProductKey, readonly GiProfileSpec[]>> = {
  A30: A30_PROFILES,
  "A100-40GB": A100_40GB_PROFILES,
  "A100-80GB": A100_80GB_PROFILES,
  "H100-80GB": H100_SXM_PROFILES,
  "H100-PCIE": H100_PCIE_PROFILES,
  "H100-NVL": H100_NVL_PROFILES,
  "GH200-96GB": GH200_96GB_PROFILES,
  H200: H200_PROFILES,
  B200: B200_PROFILES,
  "RTX-PRO-6000": RTX_PRO_6000_PROFILES,
};

export const PRODUCTS: readonly ProductKey[] = Object.keys(TABLES) as ProductKey[];

const AMPERE_DRIVERS = ["460.73.01", "470.42.01", "515.86.01", "525.125.06", "535.183.01"];
const LATE = ["550.127.06", "580.65.06", "580.173.02"];
const HOPPER_DRIVERS = ["525.125.06", "535.183.01", "550.127.06", "560.35.03", "570.133.20"];

/**
 * Driver versions the catalogue was written against, ascending; the last is the default. Each
 * is a version seen in a capture or named by GUIDE-620 as a minimum. `catalogFor` accepts any
 * driver at or above the product's minimum; these are the points where something is known.
 */
export const DRIVERS: Readonly<Record<ProductKey, readonly string[]>> = {
  A30: [...AMPERE_DRIVERS, ...LATE],
  "A100-40GB": ["450.80.02", ...AMPERE_DRIVERS, ...LATE],
  "A100-80GB": ["450.80.02", ...AMPERE_DRIVERS, ...LATE],
  "H100-80GB": [...HOPPER_DRIVERS, "580.65.06", "580.173.02"],
  "H100-PCIE": [...HOPPER_DRIVERS, "580.65.06", "580.173.02"],
  "H100-NVL": ["535.183.01", "550.127.06", "560.35.03", "570.133.20", "580.65.06", "580.173.02"],
  "GH200-96GB": ["550.54.15", "560.35.03", "570.133.20", "580.65.06", "580.173.02"],
  H200: ["550.90.07", "560.35.03", "570.133.20", "580.65.06", "580.173.02"],
  B200: ["570.133.20", "580.65.06", "580.173.02"],
  // The drivers of the two captures (R575 printed the 81-column -lgip too, per the reference,
  // but no R575 capture of this GPU is at hand, so none is catalogued).
  "RTX-PRO-6000": ["580.105.08", "610.43.02"],
};

export function defaultDriver(product: ProductKey): string {
  const list = DRIVERS[product];
  const last = list[list.length - 1];
  if (!last) throw new SlicecheckError("INTERNAL", `no catalogued driver for ${product}`);
  return last;
}

export function productFacts(product: ProductKey): ProductFacts {
  return PRODUCT_FACTS[product];
}

function normalise(s: string): string {
  return s.trim().toLowerCase().replace(/\s+/g, " ");
}

function normalisePci(s: string): string | undefined {
  const m = /^(?:0x)?([0-9a-f]{4})(10de)?$/i.exec(s.trim());
  return m ? `0x${m[1]!.toUpperCase()}10DE` : undefined;
}

/** Product and board for a product key, alias, nvidia-smi name or PCI device id. */
export function resolveBoard(
  nameOrPciId: string,
): { product: ProductKey; board: BoardFacts } | undefined {
  const key = normalise(nameOrPciId);
  const pci = normalisePci(nameOrPciId);
  for (const product of PRODUCTS) {
    const facts = PRODUCT_FACTS[product];
    for (const board of facts.boards) {
      if (pci !== undefined && board.pciId.toUpperCase() === pci.toUpperCase()) {
        return { product, board };
      }
      // Before R510 the names had no "NVIDIA " prefix (`A100-SXM4-40GB`); accept both.
      const smi = normalise(board.smiName);
      if (key === smi || `nvidia ${key}` === smi) return { product, board };
    }
    const names = [product, ...facts.aliases].map(normalise);
    const first = facts.boards[0];
    if (first && names.includes(key)) return { product, board: first };
  }
  return undefined;
}

export function resolveProduct(nameOrPciId: string): ProductKey | undefined {
  return resolveBoard(nameOrPciId)?.product;
}

function resolveProfile(spec: GiProfileSpec, table: readonly GiProfileSpec[], driver: string) {
  const memoryGiB = valueAt(spec.memoryGiB, driver);
  const profile: GiProfile = {
    id: spec.id,
    name: spec.name,
    nvmlIndex: spec.nvmlIndex,
    computeSlices: spec.computeSlices,
    memorySlices: spec.memorySlices,
    memoryGiB,
    memoryMiB: mibFromGiB(memoryGiB),
    sm: spec.sm,
    dec: spec.dec,
    enc: spec.enc,
    ce: spec.ce,
    jpeg: spec.jpeg,
    ofa: spec.ofa,
    instances: spec.instances,
    placements: spec.starts.map((start) => ({ start, size: spec.memorySlices })),
    defaultCiProfileId: spec.defaultCiProfileId,
    ciProfiles: ciProfilesFor(spec, table),
  };
  return profile;
}

/** The profiles `product` offers at `driver` (default: the newest catalogued driver). */
export function catalogFor(product: ProductKey, driver: string = defaultDriver(product)): Catalog {
  parseDriver(driver);
  const facts = PRODUCT_FACTS[product];
  if (!facts)
    throw new SlicecheckError(
      "USAGE",
      `unknown GPU product '${product}'${didYouMean(product, Object.keys(PRODUCT_FACTS))}`,
      { product },
    );
  if (compareDrivers(driver, facts.minDriver) < 0) {
    throw new SlicecheckError(
      "USAGE",
      `${product} has no MIG support before driver ${facts.minDriver}; got ${driver}`,
      { product, driver },
    );
  }
  const table = TABLES[product];
  const offered = table.filter((p) => p.since === undefined || driverAtLeast(driver, p.since));
  const giProfiles = offered.map((p) => resolveProfile(p, table, driver));
  // GUIDE concepts: "prior to NVIDIA driver release R510, the combination of a (4 memory,
  // 4 compute) and a (4 memory, 3 compute) profile was not supported".
  const four = giProfiles.find((p) => p.memorySlices === 4 && p.computeSlices === 4);
  const three = giProfiles.find((p) => p.memorySlices === 4 && p.computeSlices === 3);
  const forbiddenPairs: (readonly [number, number])[] = [];
  if (four && three && !driverAtLeast(driver, "510")) forbiddenPairs.push([four.id, three.id]);
  return { product, driver, facts, giProfiles, rules: { forbiddenPairs } };
}

/**
 * A GI profile by what a user may type to `-cgi`: the ID (`9`), the short name (`3g.40gb`) or
 * the full name (`MIG 3g.40gb`) [GUIDE].
 */
export function findGiProfile(catalog: Catalog, token: string): GiProfile | undefined {
  const t = token.trim();
  if (/^\d+$/.test(t)) return catalog.giProfiles.find((p) => p.id === Number(t));
  const name = t.replace(/^MIG\s+/i, "").toLowerCase();
  return catalog.giProfiles.find((p) => p.name.toLowerCase() === name);
}

/** A CI profile of `gi` by ID (`0`) or name (`1c.3g.40gb`, `MIG 3g.40gb`). */
export function findCiProfile(gi: GiProfile, token: string): CiProfile | undefined {
  const t = token.trim();
  if (/^\d+$/.test(t)) return gi.ciProfiles.find((p) => p.id === Number(t));
  const name = t.replace(/^MIG\s+/i, "").toLowerCase();
  return gi.ciProfiles.find((p) => p.name.toLowerCase() === name);
}

export function giProfileById(catalog: Catalog, id: number): GiProfile | undefined {
  return catalog.giProfiles.find((p) => p.id === id);
}

/** Framebuffer total of `board` at `driver`, as nvidia-smi prints it. */
export function boardMemoryMiB(board: BoardFacts, driver: string): number {
  return valueAt(board.memoryTotalMiB, driver);
}

/**
 * The BAR1 total the `MIG devices` table prints for a GI of `memorySlices` slices. Captures show
 * slices × 8 or 16 GiB − 1 MiB before R580 (8191, 16383, 65535), and an exact share from R580
 * (H100 6185 per slice, H200 14809). Products without an R580 capture keep the older rule.
 */
export function bar1MiB(facts: ProductFacts, memorySlices: number, driver: string): number {
  if (driverAtLeast(driver, "580") && facts.bar1PerSliceMiBR580 !== undefined) {
    // Rounded: on a 12-unit grid the captured per-GI value (8327 MiB for 3 units) is not a
    // whole number per unit.
    return Math.round(memorySlices * facts.bar1PerSliceMiBR580);
  }
  return memorySlices * facts.bar1PerSliceMiB - 1;
}

/**
 * The most MIG devices one GPU holds, over every catalogued product: each compute instance
 * takes at least one compute slice. A layout count above it is nonsense, not a layout that does
 * not fit, and is refused while the file is read (the planner would expand a count of 1e9 until
 * memory runs out). Counts up to it still reach the planner, which says why they do not fit on
 * a given GPU and what comes closest.
 */
export function maxMigDevicesPerGpu(): number {
  maxDevices ??= Math.max(
    ...PRODUCTS.flatMap((product) =>
      TABLES[product].map((p) => Math.max(p.computeSlices, p.instances)),
    ),
  );
  return maxDevices;
}
let maxDevices: number | undefined;
