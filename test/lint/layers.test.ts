// The layer rule of `npm run lint` (scripts/check-layers.mjs, and Biome's noImportCycles as
// biome.json sets it): the real src/ keeps it, and a planted upward import, a planted cycle and
// a planted import of the simulator each fail it, naming the file and line.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { checkLayers, importsOf, layerOf } from "../../scripts/check-layers.mjs";
import { tempDir } from "../helpers/tmp.js";

const root = join(import.meta.dirname, "..", "..");
const src = join(root, "src");

/** A copy of src/ to plant violations in. */
function srcCopy(name: string): string {
  const dir = join(tempDir(`layers-${name}`), "src");
  cpSync(src, dir, { recursive: true });
  return dir;
}

/** Adds an import as the file's last line; returns that line's number. */
function plant(dir: string, file: string, line: string): number {
  const text = readFileSync(join(dir, file), "utf8");
  appendFileSync(join(dir, file), `${text.endsWith("\n") ? "" : "\n"}${line}\n`);
  return readFileSync(join(dir, file), "utf8").split("\n").length - 1;
}

describe("layers: the import rule of npm run lint", function () {
  this.timeout(60_000);

  it("holds on the real src/: no upward import, no cycle", () => {
    assert.deepEqual(checkLayers(src), []);
  });

  it("fails an upward import (chaos importing verdicts), naming file:line, import and rule", () => {
    const dir = srcCopy("upward");
    const n = plant(dir, "chaos/faults.ts", 'import type { Verdict } from "../verdicts/types.js";');
    assert.deepEqual(checkLayers(dir), [
      `src/chaos/faults.ts:${n}: import "../verdicts/types.js": upward: chaos may not import verdicts (a layer below it)`,
    ]);
  });

  it("fails an upward import from a nested folder (mig/apply importing harness)", () => {
    const dir = srcCopy("nested");
    const n = plant(
      dir,
      "mig/apply/read.ts",
      'export { errText } from "../../harness/run-reports.js";',
    );
    const lines = checkLayers(dir);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      new RegExp(`^src/mig/apply/read\\.ts:${n}: .*upward: mig may not import harness`),
    );
  });

  it("fails a two-file cycle, naming both files and their lines", () => {
    const dir = srcCopy("cycle");
    // remote-scripts.ts imports types.ts; types.ts importing it back closes a cycle (main had it).
    const n = plant(
      dir,
      "transport/types.ts",
      'import type { END_MARKER } from "./remote-scripts.js";',
    );
    const there = readFileSync(join(dir, "transport/remote-scripts.ts"), "utf8")
      .split("\n")
      .findIndex((l) => l.includes('from "./types.js"'));
    assert.deepEqual(checkLayers(dir), [
      `src/transport/remote-scripts.ts:${there + 1}: cycle: src/transport/remote-scripts.ts:${there + 1} imports "./types.js" -> src/transport/types.ts:${n} imports "./remote-scripts.js"`,
    ]);
  });

  it("counts a dynamic and a type-only import in a cycle, and names every file of a longer one", () => {
    const files: [string, string][] = [
      ["store/a.ts", 'export const open = async () => (await import("./b.js")).b;\n'],
      ["store/b.ts", 'import { c } from "./c.js";\nexport const b = c;\n'],
      ["store/c.ts", 'import type { open } from "./a.js";\nexport const c: typeof open | 1 = 1;\n'],
      ["store/d.ts", 'import { b } from "./b.js";\nexport const d = b;\n'],
    ];
    const dir = tempDir("layers-dyn");
    mkdirSync(join(dir, "store"));
    for (const [f, t] of files) writeFileSync(join(dir, f), t);
    assert.deepEqual(checkLayers(dir), [
      'src/store/a.ts:1: cycle: src/store/a.ts:1 imports "./b.js" -> src/store/b.ts:1 imports "./c.js" -> src/store/c.ts:1 imports "./a.js"',
    ]);
    // Two cycles through one set of files: the shortest from its first file is shown, and every
    // file of the set is named.
    writeFileSync(join(dir, "store/d.ts"), 'import { b } from "./b.js";\nexport const d = b;\n');
    writeFileSync(
      join(dir, "store/a.ts"),
      'import "./d.js";\nexport const open = async () => (await import("./b.js")).b;\n',
    );
    assert.deepEqual(checkLayers(dir), [
      'src/store/a.ts:2: cycle: src/store/a.ts:2 imports "./b.js" -> src/store/b.ts:1 imports "./c.js" -> src/store/c.ts:1 imports "./a.js" (one of the cycles among src/store/a.ts, src/store/b.ts, src/store/c.ts, src/store/d.ts)',
    ]);
  });

  it("fails a product file importing the simulator", () => {
    const dir = srcCopy("sim");
    const n = plant(dir, "harness/lock.ts", 'import "../../sim/src/spec.js";');
    assert.deepEqual(checkLayers(dir), [
      `src/harness/lock.ts:${n}: import "../../sim/src/spec.js": simulator: the product imports the simulator`,
    ]);
  });

  it("reads imports as TypeScript does: comments and strings are not imports", () => {
    const text = [
      '// import { x } from "../verdicts/a.js";',
      "/* import('../report/b.js') */",
      "const s = \"import { y } from '../store/c.js'\";",
      'import type { T } from "./t.js";',
      'export * from "./u.js";',
      'const m = await import("./v.js");',
      'import pLimit from "p-limit";',
    ].join("\n");
    assert.deepEqual(importsOf(text), [
      { spec: "./t.js", line: 4 },
      { spec: "./u.js", line: 5 },
      { spec: "./v.js", line: 6 },
    ]);
    assert.equal(layerOf("util/shell.ts"), "base");
    assert.equal(layerOf("errors.ts"), "base");
    assert.equal(layerOf("mig/apply/read.ts"), "mig");
    assert.equal(layerOf("gadgets/x.ts"), undefined);
  });

  it("the command exits 1 on a planted violation and 0 on the real src/", () => {
    const dir = srcCopy("cli");
    plant(dir, "verdicts/types.ts", 'import type { Store } from "../store/store.js";');
    const bad = spawnSync(process.execPath, [join(root, "scripts/check-layers.mjs"), dir], {
      encoding: "utf8",
    });
    assert.equal(bad.status, 1, bad.stderr);
    assert.match(
      bad.stderr,
      /src\/verdicts\/types\.ts:\d+: import "\.\.\/store\/store\.js": upward/,
    );
    const good = spawnSync(process.execPath, [join(root, "scripts/check-layers.mjs"), src], {
      encoding: "utf8",
    });
    assert.equal(good.status, 0, good.stderr);
  });

  it("Biome's noImportCycles, as biome.json sets it, fails a planted two-file cycle", () => {
    const config = JSON.parse(readFileSync(join(root, "biome.json"), "utf8"));
    const rule = config.linter.rules.suspicious.noImportCycles;
    assert.equal(rule.level, "error");
    const dir = tempDir("layers-biome");
    writeFileSync(
      join(dir, "biome.json"),
      JSON.stringify({
        linter: { rules: { preset: "none", suspicious: { noImportCycles: rule } } },
      }),
    );
    writeFileSync(join(dir, "a.ts"), 'import { b } from "./b.js";\nexport const a = () => b;\n');
    writeFileSync(
      join(dir, "b.ts"),
      'import type { a } from "./a.js";\nexport const b: typeof a | null = null;\n',
    );
    const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");
    const r = spawnSync(process.execPath, [biome, "lint", "."], { cwd: dir, encoding: "utf8" });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /a\.ts:1:\d+ lint\/suspicious\/noImportCycles/);
    assert.match(r.stdout + r.stderr, /b\.ts:1:\d+ lint\/suspicious\/noImportCycles/);
  });
});
