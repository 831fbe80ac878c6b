// Built-in MIG profile catalogue per GPU product and driver (offline `plan`, the simulator).
// On a live node the catalogue comes from `nvidia-smi mig -lgip` / `-lgipp` instead.

export {
  bar1MiB,
  boardMemoryMiB,
  catalogFor,
  DRIVERS,
  defaultDriver,
  findCiProfile,
  findGiProfile,
  giProfileById,
  maxMigDevicesPerGpu,
  PRODUCTS,
  productFacts,
  resolveBoard,
  resolveProduct,
} from "./catalog.js";
export { baseProfileName } from "./compute.js";
export type { DriverStep, DriverValue, DriverVersion } from "./driver.js";
export { compareDrivers, driverAtLeast, parseDriver, valueAt } from "./driver.js";
export { formatGiB, mibFromGiB } from "./memory.js";
export { defaultBusbwFloorGBs, type NvlinkSpec, nvlinkOf } from "./nvlink.js";
export type {
  Architecture,
  BoardFacts,
  Catalog,
  CatalogRules,
  CiProfile,
  GiProfile,
  GiProfileSpec,
  Placement,
  ProductFacts,
  ProductKey,
} from "./types.js";
