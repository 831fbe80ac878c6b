// What suites declare (`harness({ … })`) is read before any node is touched, from the suites'
// own files; a file that does not parse is bad input naming its file:line; a top level that
// needs nodes is no load failure (it is left to the real load, which has the nodes).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import type { RunOptionsView } from "../../src/harness/api-types.js";
import { declareSuites, labelsOf } from "../../src/harness/suite-declare.js";
import { resolveSuites } from "../../src/harness/suites.js";

const VIEW: RunOptionsView = {
  runId: "sc-declare-test",
  durationS: 1,
  tolerance: 0.05,
  faults: [],
  aggressors: null,
  tenants: [],
  layout: null,
  outDir: "",
};

describe("suite declarations (read offline, before any node)", function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), "sc-declare-"));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return resolveSuites(`./${name}`, dir);
  };

  it("the built-in suites declare what the run prepares for them", async () => {
    const got = await declareSuites(
      resolveSuites("layout,stress,isolation,health,slurm,regression"),
      VIEW,
    );
    const by = new Map(got.map((f) => [f.name, f.needs ?? {}]));
    assert.equal(by.get("isolation")?.injectsFaults, true);
    assert.equal(by.get("health")?.readsKernelLog, true);
    assert.equal(by.get("layout")?.needsLayout, true);
    assert.equal(by.get("stress")?.runsWorkloads, true);
    assert.deepEqual(
      got.filter((f) => f.needs?.unfitOnFailure).map((f) => f.name),
      ["isolation", "slurm", "health"],
    );
    // None of the others injects faults or reads the kernel log.
    assert.deepEqual(
      got.filter((f) => f.needs?.injectsFaults || f.needs?.readsKernelLog).map((f) => f.name),
      ["isolation", "health"],
    );
    assert.deepEqual(labelsOf(got[2], "isolation"), {
      epic: "Tenant isolation",
      feature: "Isolation",
      severity: "critical",
    });
  });

  it("a second run in the same process reads the declarations again (no cached module)", async () => {
    for (let i = 0; i < 2; i++) {
      const [h] = await declareSuites(resolveSuites("health"), VIEW);
      assert.equal(h?.needs?.readsKernelLog, true, `run ${i + 1}`);
    }
  });

  it("a user's suite declares the same way; undeclared, it needs nothing and gets the site labels", async () => {
    const [f] = await declareSuites(
      file(
        "mine.mjs",
        'import { harness } from "slicecheck/suite";\nconst run = harness({ injectsFaults: true });\nconst first = run.nodes[0].name; // needs a node: fails without\n',
      ),
      VIEW,
    );
    assert.equal(f?.needs?.injectsFaults, true);
    const [g] = await declareSuites(
      file("plain.mjs", 'import { harness } from "slicecheck/suite";\nharness();\n'),
      VIEW,
    );
    assert.deepEqual(g?.needs, {});
    assert.deepEqual(labelsOf(g, "./plain.mjs"), {
      epic: "Site checks",
      feature: "./plain.mjs",
      severity: "normal",
    });
  });

  for (const [name, text, line] of [
    [
      "broken.mjs",
      'import { harness } from "slicecheck/suite";\nharness();\ndescribe("x", () => {\n',
      4,
    ],
    ["broken.ts", "const a: number = 1;\nfunction f( {\n  return a;\n}\n", 3],
  ] as const)
    it(`${name} that does not parse is bad input (SUITE_LOAD, exit 3) naming its file:line`, async () => {
      const e = await declareSuites(file(name, text), VIEW).then(
        () => null,
        (x: unknown) => x,
      );
      assert.ok(isSlicecheckError(e, "SUITE_LOAD"), String(e));
      assert.equal(e.exitClass, "bad-input");
      assert.match(
        e.message,
        new RegExp(`suite file \\./${name.replace(".", "\\.")}:${line}:\\d+: `),
      );
    });

  it("a suite importing a file that is not there is bad input naming the suite", async () => {
    const e = await declareSuites(file("lost.mjs", 'import "./not-there.mjs";\n'), VIEW).then(
      () => null,
      (x: unknown) => x,
    );
    assert.ok(isSlicecheckError(e, "SUITE_LOAD"), String(e));
    assert.match(e.message, /suite file \.\/lost\.mjs cannot be loaded: .*not-there\.mjs/);
  });
});
