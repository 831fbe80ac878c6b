// The state directory of one simulated node: what the simulated tools read and change.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SimNodeSpec } from "./spec.js";

export function initNodeState(stateDir: string, spec: SimNodeSpec): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(stateDir, "node.json"), `${JSON.stringify(spec, null, 2)}\n`);
}
