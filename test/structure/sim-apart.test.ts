// The simulator is its own package (sim/), which the product never imports (DESIGN.md, layout):
// the product reads no SLICECHECK_SIM_* variable and names no simulator module, except the
// loader that `slicecheck sim …` goes through. The scanner is shown failing on a planted tree.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_SIM_INVENTORY } from "../../sim/src/index.js";
import { DEFAULT_INVENTORY } from "../../src/cli/context.js";
import { simLeaks } from "../helpers/sim-apart.js";
import { tempDir } from "../helpers/tmp.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const REAL = {
  root,
  productDir: join(root, "src"),
  simDir: join(root, "sim"),
  loaders: [join(root, "src/cli/sim-loader.ts")],
};

function plant(files: Record<string, string>): typeof REAL {
  const dir = tempDir("sim-apart");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return {
    root: dir,
    productDir: join(dir, "src"),
    simDir: join(dir, "sim"),
    loaders: [join(dir, "src/cli/sim-loader.ts")],
  };
}

const IMPORT_SIM = 'import { x } from "../../sim/src/nvsmi/state.js";';
const LOAD_SIM = 'export const m = () => import("../../sim/src/faults.js");';
const URL_SIM = 'export const u = new URL("../../sim/src/index.ts", import.meta.url);';
const PKG_SIM = 'import type { S } from "@slicecheck/sim";';

describe("the product keeps apart from the simulator", () => {
  it("names each planted leak by file:line, and lets the loader and the simulator's own files be", () => {
    const rules = plant({
      "src/harness/lock.ts": ["// a lock", 'const DIR = "$SLICECHECK_SIM_STATE/x";'].join("\n"),
      "src/cli/context.ts": `${IMPORT_SIM}\n`,
      "src/cli/other.ts": `${LOAD_SIM}\n`,
      "src/cli/url.ts": `${URL_SIM}\n`,
      "src/report/pkg.ts": `${PKG_SIM}\n`,
      "src/cli/sim-loader.ts": `${URL_SIM}\n`,
      "sim/src/sshd.ts": "export const env = { SLICECHECK_SIM_STATE: 1 };\n",
      "src/mig/fine.ts":
        'import { y } from "./similar.js";\nimport { z } from "../../simulator/a.js";\n',
    });
    assert.deepEqual(simLeaks(rules), [
      `src/cli/context.ts:1: names the simulator (../../sim/src/nvsmi/state.js): ${IMPORT_SIM}`,
      `src/cli/other.ts:1: names the simulator (../../sim/src/faults.js): ${LOAD_SIM}`,
      `src/cli/url.ts:1: names the simulator (../../sim/src/index.ts): ${URL_SIM}`,
      'src/harness/lock.ts:2: reads a SLICECHECK_SIM variable: const DIR = "$SLICECHECK_SIM_STATE/x";',
      `src/report/pkg.ts:1: names the simulator (@slicecheck/sim): ${PKG_SIM}`,
    ]);
  });

  it("the loader may name the simulator but may not read its variables", () => {
    const rules = plant({
      "src/cli/sim-loader.ts": "export const s = process.env.SLICECHECK_SIM_STATE;\n",
    });
    assert.deepEqual(simLeaks(rules), [
      "src/cli/sim-loader.ts:1: reads a SLICECHECK_SIM variable: export const s = process.env.SLICECHECK_SIM_STATE;",
    ]);
  });

  it("src/ has no SLICECHECK_SIM and no import of the simulator outside the sim commands' loader", () => {
    assert.deepEqual(simLeaks(REAL), []);
  });

  it("the product's default inventory is the one `slicecheck sim up` writes (two constants, one value)", () => {
    assert.equal(DEFAULT_INVENTORY, DEFAULT_SIM_INVENTORY);
  });
});
