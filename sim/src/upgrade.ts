// `slicecheck sim upgrade-driver`'s effect on a simulated node: what a driver upgrade does to it
// (new output layouts, profile table and UUID formats, MIG state lost as at a module reload),
// optionally with performance regressions planted so that `slicecheck diff` can be shown to find
// them. The simulator owns its files; the CLI only parses the request and prints the result.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../src/errors.js";
import { catalogFor, DRIVERS, resolveProduct } from "../../src/mig/catalog/catalog.js";
import { recordNodeDriver, simNodeRecord } from "./cluster.js";
import { readState, updateState, upgradeDriverState } from "./nvsmi/state.js";
import { REGRESSIONS_FILE, type Regressions } from "./workloads/model.js";

/** Upgrades `node` of the cluster of `inventory` to driver `to`; returns the driver it had. */
export async function upgradeSimDriver(
  inventory: string,
  node: string,
  to: string,
  regressions: Regressions,
): Promise<string> {
  const stateDir = join(simNodeRecord(inventory, node).dir, "state");
  checkUpgrade(stateDir, node, to, regressions);
  const from = await updateState(stateDir, (s) => {
    const was = s.driver;
    upgradeDriverState(s, to);
    return { changed: true, result: was };
  });
  // Replaced, not merged: regressions belong to a driver, and this is a new one.
  writeFileSync(join(stateDir, REGRESSIONS_FILE), `${JSON.stringify(regressions, null, 2)}\n`);
  recordNodeDriver(inventory, node, to);
  return from;
}

/** Everything is checked before the node changes: a refused upgrade touches nothing. */
function checkUpgrade(stateDir: string, node: string, to: string, regressions: Regressions): void {
  const products = [...new Set(readState(stateDir).gpus.map((g) => g.product))];
  for (const p of products) {
    const key = resolveProduct(p);
    if (!key) continue; // boards without MIG have no catalogue; any driver will do
    if (!DRIVERS[key].includes(to)) {
      throw new SlicecheckError(
        "USAGE",
        `driver ${to} is not in the catalogue for ${key}; known: ${DRIVERS[key].join(", ")}`,
        { node, product: key, driver: to },
      );
    }
    const names = new Set(catalogFor(key, to).giProfiles.map((g) => g.name));
    const unknown = Object.keys(regressions).filter((r) => !names.has(r));
    if (unknown.length) {
      throw new SlicecheckError(
        "USAGE",
        `--regress: ${key} on driver ${to} has no profile ${unknown.join(", ")}; it has ${[...names].join(", ")}`,
      );
    }
  }
}
