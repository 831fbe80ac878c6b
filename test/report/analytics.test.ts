// Reports work offline: allure-commandline 2.x writes a Google Analytics snippet into the
// report's index.html unless ALLURE_NO_ANALYTICS is "true". Planted: the same generator without
// the switch writes it (so the scan below can see one); `generateReport` leaves no file with an
// analytics address; and a snippet that gets through anyway is stripped from the HTML.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ANALYTICS,
  allureBin,
  allureEnv,
  generateReport,
  stripAnalytics,
} from "../../src/report/generate.js";
import { tempDir } from "../helpers/tmp.js";

function withAnalytics(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((p) => ANALYTICS.test(readFileSync(p, "latin1")));
}

function results(): string {
  const dir = join(tempDir("analytics"), "allure-results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "0b6f7c1e-8f0e-4a8e-9a57-2f4f2d1c0001-result.json"),
    JSON.stringify({
      uuid: "0b6f7c1e-8f0e-4a8e-9a57-2f4f2d1c0001",
      historyId: "h1",
      name: "computes",
      fullName: "stress computes",
      status: "passed",
      stage: "finished",
      start: 1,
      stop: 2,
      labels: [],
      steps: [],
      attachments: [],
      parameters: [],
    }),
  );
  return dir;
}

describe("reports without analytics (allure-commandline 2.x, Java)", function () {
  this.timeout(120_000);

  it("allure's JVM starts with the quick-start options, and a user's JAVA_OPTS still win", () => {
    // The JVM prints the options it settled on; a later option overrides an earlier one.
    const flags = (javaOpts: string) => {
      const env = { ...process.env, ...allureEnv({ JAVA_OPTS: javaOpts }) };
      const r = spawnSync(allureBin(), ["--version"], { env, encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout;
    };
    const ours = flags("-XX:+PrintCommandLineFlags");
    assert.match(ours, /-XX:TieredStopAtLevel=1\b/);
    assert.match(ours, /-XX:\+UseSerialGC\b/);
    const theirs = flags("-XX:TieredStopAtLevel=4 -XX:+PrintCommandLineFlags");
    assert.match(theirs, /-XX:TieredStopAtLevel=4\b/);
  });

  it("planted: allure generate without the switch writes the analytics snippet", () => {
    const out = join(tempDir("analytics"), "plain");
    const env = { ...process.env };
    delete env.ALLURE_NO_ANALYTICS;
    const r = spawnSync(allureBin(), ["generate", results(), "-o", out, "--clean"], { env });
    assert.equal(r.status, 0, String(r.stderr));
    assert.deepEqual(withAnalytics(out), [join(out, "index.html")]);
    // What gets through anyway is stripped, and the report's own scripts stay.
    assert.deepEqual(stripAnalytics(out), [join(out, "index.html")]);
    assert.deepEqual(withAnalytics(out), []);
    assert.match(
      readFileSync(join(out, "index.html"), "utf8"),
      /<script src="assets\/index-[\w-]+\.js"><\/script>/,
    );
  });

  it("generateReport: no file of the report or its single-file copy names an analytics address", () => {
    const base = tempDir("analytics");
    const out = join(base, "report");
    const r = generateReport({
      results: results(),
      out,
      historyDir: join(base, "history"),
      singleFile: true,
      name: "t",
    });
    assert.ok(r.singleFile);
    assert.deepEqual(withAnalytics(out), []);
  });
});
