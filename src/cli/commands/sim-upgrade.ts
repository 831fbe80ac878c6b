// `slicecheck sim upgrade-driver NODE --to VERSION [--regress PROFILE:METRIC=FACTOR …]`: what a
// driver upgrade does to a simulated node (new output layouts, profile table and UUID formats,
// MIG state lost as at a module reload), optionally with performance regressions planted so
// that `slicecheck diff` can be shown to find them.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SlicecheckError } from "../../errors.js";
import { catalogFor, DRIVERS, resolveProduct } from "../../mig/catalog/catalog.js";
import { DEFAULT_SIM_INVENTORY, recordNodeDriver, simNodeRecord } from "../../sim/cluster.js";
import { readState, updateState, upgradeDriverState } from "../../sim/nvsmi/state.js";
import { REGRESSIONS_FILE, type Regressions } from "../../sim/workloads/model.js";
import type { Out } from "../context.js";

export interface SimUpgradeOptions {
  to: string;
  regress?: string[];
  inventory?: string;
  json?: boolean;
}

export function parseRegressions(list: readonly string[]): Regressions {
  const out: Regressions = {};
  for (const item of list) {
    const m = /^([^:=\s]+):([A-Za-z_]+)=(\d+(?:\.\d+)?)$/.exec(item.trim());
    const factor = Number(m?.[3]);
    if (!m?.[1] || !m[2] || !(factor > 0)) {
      throw new SlicecheckError(
        "USAGE",
        `--regress expects PROFILE:METRIC=FACTOR with FACTOR > 0 (e.g. 1g.10gb:tflops=0.8), got '${item}'`,
      );
    }
    out[m[1]] = { ...out[m[1]], [m[2]]: factor };
  }
  return out;
}

export async function simUpgradeCommand(
  node: string,
  o: SimUpgradeOptions,
  io: Out,
): Promise<number> {
  const inventory = o.inventory ?? DEFAULT_SIM_INVENTORY;
  const regressions = parseRegressions(o.regress ?? []);
  const stateDir = join(simNodeRecord(inventory, node).dir, "state");
  const products = [...new Set(readState(stateDir).gpus.map((g) => g.product))];
  // Everything is checked before the node changes: a refused upgrade touches nothing.
  for (const p of products) {
    const key = resolveProduct(p);
    if (!key) continue; // boards without MIG have no catalogue; any driver will do
    if (!DRIVERS[key].includes(o.to)) {
      throw new SlicecheckError(
        "USAGE",
        `driver ${o.to} is not in the catalogue for ${key}; known: ${DRIVERS[key].join(", ")}`,
        { node, product: key, driver: o.to },
      );
    }
    const names = new Set(catalogFor(key, o.to).giProfiles.map((g) => g.name));
    const unknown = Object.keys(regressions).filter((r) => !names.has(r));
    if (unknown.length) {
      throw new SlicecheckError(
        "USAGE",
        `--regress: ${key} on driver ${o.to} has no profile ${unknown.join(", ")}; it has ${[...names].join(", ")}`,
      );
    }
  }
  const from = await updateState(stateDir, (s) => {
    const was = s.driver;
    upgradeDriverState(s, o.to);
    return { changed: true, result: was };
  });
  // Replaced, not merged: regressions belong to a driver, and this is a new one.
  writeFileSync(join(stateDir, REGRESSIONS_FILE), `${JSON.stringify(regressions, null, 2)}\n`);
  recordNodeDriver(inventory, node, o.to);
  if (o.json) io.out(JSON.stringify({ node, from, to: o.to, regressions }, null, 2));
  else {
    const planted = Object.entries(regressions).flatMap(([p, m]) =>
      Object.entries(m).map(([k, f]) => `${p}:${k}×${f}`),
    );
    io.out(
      `${node}: driver ${from} → ${o.to} (MIG state reset as at a module reload)${planted.length ? `; planted ${planted.join(", ")}` : ""}`,
    );
  }
  return 0;
}
