// npm test runs the unit group beside the end-to-end group (scripts/test.mjs): a failing unit
// file must still fail the whole run and stop the end-to-end files, not wait for them.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bothGroups } from "../../scripts/test.mjs";
import { tempDir } from "../helpers/tmp.js";

// As npm test runs the end-to-end group: parallel workers (their output not printed here).
const PARALLEL = ["--parallel", "--jobs", "2"];
const DOT = ["--reporter", "dot"];

describe("npm test's two groups side by side (scripts/test.mjs)", function () {
  this.timeout(120_000);
  const dir = tempDir("both-groups");
  const file = (name: string, body: string) => {
    const p = join(dir, name);
    writeFileSync(p, `import { existsSync, writeFileSync } from "node:fs";\n${body}\n`);
    return p;
  };
  const mark = (name: string) => JSON.stringify(join(dir, name));
  // An end-to-end file that outlasts this test's timeout unless it is stopped.
  const slow = file(
    "slow.test.ts",
    `it("waits", async () => { writeFileSync(${mark("slow-started")}, ""); await new Promise((r) => setTimeout(r, 600_000)); writeFileSync(${mark("slow-ended")}, ""); });`,
  );

  it("a failing unit file fails the run and stops the end-to-end files still running", async () => {
    // The unit file fails once the end-to-end file is under way beside it.
    const failing = file(
      "failing.test.ts",
      `it("fails", async () => { while (!existsSync(${mark("slow-started")})) await new Promise((r) => setTimeout(r, 50)); throw new Error("planted"); });`,
    );
    const code = await bothGroups({ unit: [failing], e2e: [slow] }, DOT, PARALLEL, 2, true);
    assert.notEqual(code, 0, "the planted unit failure fails the run");
    assert.ok(existsSync(join(dir, "slow-started")), "the end-to-end file had started beside it");
    assert.ok(!existsSync(join(dir, "slow-ended")), "and was stopped, not waited for");
  });

  it("passes when both groups pass, and fails when only the end-to-end group fails", async () => {
    const ok = file("ok.test.ts", `it("passes", () => {});`);
    const bad = file("bad.test.ts", `it("fails", () => { throw new Error("planted e2e"); });`);
    assert.equal(await bothGroups({ unit: [ok], e2e: [ok] }, DOT, PARALLEL, 2, true), 0);
    assert.notEqual(await bothGroups({ unit: [ok], e2e: [bad] }, DOT, PARALLEL, 2, true), 0);
  });
});
