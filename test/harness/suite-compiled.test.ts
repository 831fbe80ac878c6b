// The built-in suites load from their compiled copies (dist/suites) only while every source is
// the one that was compiled: an edited suite or helper, or a missing manifest, sends them back
// to their sources. Compiled here with the build's own function, on a folder of this test's.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { compileSuites, SUITE_API } from "../../scripts/bundle.mjs";
import { compiledIsCurrent, SOURCES_MANIFEST } from "../../src/harness/suite-compiled.js";
import { modulePaths } from "../../src/harness/suite-loader.js";
import type { SuiteFile } from "../../src/harness/suites.js";

const ROOT = join(import.meta.dirname, "..", "..");

describe("compiled built-in suites (dist/suites)", function () {
  this.timeout(30_000);
  let dir = "";
  let dirs = { sourceDir: "", compiledDir: "" };
  const builtin = (): SuiteFile => ({
    name: "a",
    path: join(dirs.sourceDir, "a.ts"),
    identity: "suites/a.ts",
    builtin: true,
  });
  const user = (): SuiteFile => ({
    name: "./mine.ts",
    path: join(dir, "mine.ts"),
    identity: "mine.ts",
    builtin: false,
  });

  /** A source file under the test's suites/ folder. */
  const source = (rel: string, text: string) => writeFileSync(join(dirs.sourceDir, rel), text);

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sc-compiled-"));
    dirs = { sourceDir: join(dir, "suites"), compiledDir: join(dir, "dist-suites") };
    mkdirSync(join(dirs.sourceDir, "lib"), { recursive: true });
    source(
      "a.ts",
      'import { twice } from "./lib/b.js";\nexport const value: number = twice(21);\n',
    );
    source("lib/b.ts", "export function twice(n: number): number {\n  return n * 2;\n}\n");
    writeFileSync(join(dir, "mine.ts"), "export const mine = 1;\n");
    assert.equal(await compileSuites(ROOT, dirs.sourceDir, dirs.compiledDir), 2);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("loads a built-in suite from its compiled copy, which runs as its source does", async () => {
    assert.equal(compiledIsCurrent(dirs), true);
    const [path] = modulePaths([builtin()], dirs);
    assert.equal(path, join(dirs.compiledDir, "a.js"));
    const mod = (await import(pathToFileURL(path ?? "").href)) as { value: number };
    assert.equal(mod.value, 42);
  });

  it("gives the compiled suites `slicecheck/suite` as the one bundled module, and only that", async () => {
    source(
      "c.ts",
      'import { harness } from "slicecheck/suite";\nexport const kind = typeof harness;\nexport const text = "slicecheck/suite";\n',
    );
    source("lib/d.ts", 'export { fail } from "slicecheck/suite";\n');
    assert.equal(await compileSuites(ROOT, dirs.sourceDir, dirs.compiledDir), 4);
    const compiled = (rel: string) => readFileSync(join(dirs.compiledDir, rel), "utf8");
    assert.match(compiled("c.js"), /from "\.\/suite-api\.js"/);
    assert.match(compiled("lib/d.js"), /from "\.\.\/suite-api\.js"/);
    // Only the import: a string that reads the same is the suite's own.
    assert.match(compiled("c.js"), /text = "slicecheck\/suite"/);
    // One module: no import of its own but Node's.
    const api = compiled(SUITE_API);
    assert.deepEqual(
      [...api.matchAll(/^import .* from "([^"]+)"/gm)]
        .map((m) => m[1])
        .filter((x) => !x?.startsWith("node:")),
      [],
    );
    const mod = (await import(pathToFileURL(join(dirs.compiledDir, "c.js")).href)) as {
      kind: string;
    };
    assert.equal(mod.kind, "function");
  });

  it("loads a user's file from itself, compiled or not", () => {
    assert.deepEqual(modulePaths([user(), builtin()], dirs), [
      user().path,
      join(dirs.compiledDir, "a.js"),
    ]);
  });

  it("goes back to the sources once a helper is edited after the build", () => {
    source("lib/b.ts", "export function twice(n: number): number {\n  return n * 3;\n}\n");
    assert.equal(compiledIsCurrent(dirs), false);
    assert.deepEqual(modulePaths([builtin()], dirs), [builtin().path]);
  });

  it("goes back to the sources without a manifest, or with a source gone", () => {
    rmSync(join(dirs.sourceDir, "lib", "b.ts"));
    assert.deepEqual(modulePaths([builtin()], dirs), [builtin().path]);
    rmSync(join(dirs.compiledDir, SOURCES_MANIFEST));
    assert.equal(compiledIsCurrent(dirs), false);
  });
});
