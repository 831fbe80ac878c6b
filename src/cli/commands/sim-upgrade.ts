// `slicecheck sim upgrade-driver NODE --to VERSION [--regress PROFILE:METRIC=FACTOR …]`: what a
// driver upgrade does to a simulated node, optionally with performance regressions planted so
// that `slicecheck diff` can be shown to find them. The simulator changes its node
// (sim/src/upgrade.ts); this parses the request and prints what changed.
import { SlicecheckError } from "../../errors.js";
import type { Out } from "../context.js";
import { loadSim, type Regressions } from "../sim-loader.js";

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
  const regressions = parseRegressions(o.regress ?? []);
  const sim = await loadSim();
  const inventory = o.inventory ?? sim.DEFAULT_SIM_INVENTORY;
  const from = await sim.upgradeSimDriver(inventory, node, o.to, regressions);
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
