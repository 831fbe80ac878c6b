// Which GPU products and drivers a simulated node can have: those of the MIG catalogue.
import { SlicecheckError } from "../../src/errors.js";
import {
  catalogFor,
  DRIVERS,
  defaultDriver,
  PRODUCTS,
  type ProductKey,
  resolveProduct,
} from "../../src/mig/catalog/index.js";
import { didYouMean } from "../../src/util/closest.js";

export function resolveSimProduct(name: string, where: string): ProductKey {
  const p = resolveProduct(name);
  if (!p) {
    throw new SlicecheckError(
      "USAGE",
      `${where}: unknown GPU product '${name}'${didYouMean(name, PRODUCTS)}; known: ${PRODUCTS.join(", ")}`,
    );
  }
  return p;
}

export function defaultDriverFor(product: string): string {
  const p = resolveSimProduct(product, "GPU");
  return defaultDriver(p);
}

/** Refuses a driver the catalogue cannot model for the product (too old for MIG, or unparsable). */
export function checkSimDriver(product: string, driver: string, where: string): void {
  const p = resolveSimProduct(product, where);
  try {
    catalogFor(p, driver);
  } catch (e) {
    const known = DRIVERS[p].join(", ");
    throw new SlicecheckError(
      "USAGE",
      `${where}: driver ${driver} for ${p}: ${(e as Error).message} (catalogued: ${known})`,
    );
  }
}
