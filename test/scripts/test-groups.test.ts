// npm test splits the test files into unit and end-to-end groups (scripts/test.mjs) from what
// each file uses. The split must lose no file, run none twice, and send every file that starts
// a simulated cluster, Slurm or PostgreSQL to the end-to-end group (run in its own worker).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { groups } from "../../scripts/test.mjs";
import { tempDir } from "../helpers/tmp.js";

function listed(group: string): string[] {
  const r = spawnSync(process.execPath, ["scripts/test.mjs", group, "--list"], {
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split("\n").filter(Boolean);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? walk(join(dir, e.name))
      : e.name.endsWith(".test.ts")
        ? [join(dir, e.name)]
        : [],
  );
}

describe("npm test's unit and end-to-end groups (scripts/test.mjs)", () => {
  const unit = listed("unit");
  const e2e = listed("e2e");

  it("puts every test file under test/ and sim/test/ in exactly one group", () => {
    const all = [...walk("test"), ...walk("sim/test")].sort();
    assert.ok(all.includes("sim/test/cluster.test.ts"), "the simulator package's tests run too");
    assert.ok(all.length > 50, `found ${all.length} test files`);
    assert.deepEqual([...unit, ...e2e].sort(), all);
    assert.deepEqual(
      unit.filter((f) => e2e.includes(f)),
      [],
    );
    assert.deepEqual(listed("all").sort(), all);
  });

  it("sends every file that starts a cluster, Slurm or PostgreSQL to the end-to-end group", () => {
    const starters = [...walk("test"), ...walk("sim/test")].filter((f) =>
      /\b(useCluster|startCluster|useSlurmCluster|usePostgres|startPostgres|simUp)\(/.test(
        readFileSync(f, "utf8"),
      ),
    );
    assert.ok(starters.length > 20, `found ${starters.length} files that start a cluster`);
    assert.deepEqual(
      starters.filter((f) => !e2e.includes(f)),
      [],
    );
    assert.ok(e2e.includes("test/demo.test.ts"), "the demo is end to end");
    for (const f of ["test/nvsmi/captures.test.ts", "test/mig/planner.test.ts"])
      assert.ok(unit.includes(f), `${f} starts nothing: unit`);
  });

  it("moves a file to the end-to-end group once it imports the cluster helper", () => {
    const dir = tempDir("groups");
    const plain = join(dir, "plain.test.ts");
    const planted = join(dir, "planted.test.ts");
    writeFileSync(plain, 'import { nodeSpec } from "../helpers/node.js";\n');
    // Spelled in two parts so that this file itself does not read as one that starts a cluster.
    writeFileSync(planted, `import { useCluster } from "../helpers/${"cluster"}.js";\n`);
    assert.deepEqual(groups([plain, planted]), { unit: [plain], e2e: [planted] });
  });
});
