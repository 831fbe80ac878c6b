// The built-in suites are named in one registry (src/util/suite-registry.ts, issue 21): the rest
// of src/ reads a suite's role from it or imports its name, so no report or verdict compares a
// check's suite with a literal of its own. The scanner is shown failing on planted sources.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BUILTIN_SUITES } from "../../src/util/suite-registry.js";
import { strayedSuiteNames, suiteNamesIn } from "../helpers/suite-names.js";
import { tempDir } from "../helpers/tmp.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const REGISTRY = "src/util/suite-registry.ts";

const hits = (text: string) =>
  suiteNamesIn("planted.ts", text, BUILTIN_SUITES).map((h) => `${h.line}: ${h.why}`);

describe("built-in suite names live in one registry", () => {
  it("finds a planted name in each suite context, by line and why", () => {
    const planted = [
      'if (c.suite === "isolation") x();',
      "const y = 'stress' !== check.suite;",
      'const titles = { "health": "the GPUs stay healthy" };',
      'const r = { suite: "regression" as const, node };',
      'interface E { suite: "layout" | "health" }',
      "if (o.suites.includes(`slurm`)) z();",
      'switch (c.suite) { case "nccl": break; }',
      'for (const s of ["layout", "stress"]) use(s);',
      'export const DEFAULT_SUITE = "stress";',
    ].join("\n");
    assert.deepEqual(hits(planted), [
      "1: compared",
      "2: compared",
      "3: keyed",
      "4: keyed",
      "5: typed",
      "5: typed",
      "6: asked",
      "7: switched",
      "8: listed",
      "8: listed",
      "9: keyed",
    ]);
  });

  it("leaves the same words alone where they are no suite", () => {
    const innocent = [
      '// c.suite === "isolation" in a comment',
      'const spec = { name: "stress" }; if (spec.name === "stress") go();',
      'const dir = join(out, "isolation", scenario);',
      'progress.phase(nodes, "layout", "config a");',
      'const msg = "run --suites slurm to assess it";',
      'type Workload = "stress" | "nccl";',
      'const one = ["stress", "memhog", "crasher"];',
      'const k = x ? "nccl" : "cuda";',
      'const s = suiteOf("matrix") + " suite not run";',
    ].join("\n");
    assert.deepEqual(hits(innocent), []);
  });

  it("names each stray by file:line in a planted tree, and lets the registry be", () => {
    const dir = tempDir("suite-names");
    const plant = (path: string, text: string) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    plant(REGISTRY, 'export const BUILTIN_SUITES = ["layout", "stress"] as const;\n');
    plant(
      "src/report/page.ts",
      '// the page\nconst iso = checks.filter((c) => c.suite === "isolation");\n',
    );
    plant("src/verdicts/fine.ts", 'import { hasRole } from "../util/suite-registry.js";\n');
    const found = strayedSuiteNames({
      srcDir: join(dir, "src"),
      registry: join(dir, REGISTRY),
      names: BUILTIN_SUITES,
      root: dir,
    });
    assert.deepEqual(found, [
      'src/report/page.ts:2: a built-in suite name, compared: const iso = checks.filter((c) => c.suite === "isolation");',
    ]);
  });

  it("src/ names no built-in suite outside the registry", () => {
    const found = strayedSuiteNames({
      srcDir: join(root, "src"),
      registry: join(root, REGISTRY),
      names: BUILTIN_SUITES,
      root,
    });
    assert.deepEqual(found, []);
  });

  it("the registry lists exactly the suite files of suites/", () => {
    const files = readdirSync(join(root, "suites"), { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".ts"))
      .map((e) => e.name.replace(/\.ts$/, ""));
    assert.deepEqual([...files].sort(), [...BUILTIN_SUITES].sort());
  });
});
