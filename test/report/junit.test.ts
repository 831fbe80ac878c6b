// junit.xml from check records: per testsuite the nodes' properties (driver, layout, route), a
// workload log's last 40 lines as the testcase's system-out, failure/error/skipped by status,
// and the whole file valid against Jenkins xunit's junit-10.xsd with libxml2's xmllint.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { allureResultOf } from "../../src/report/allure-complete.js";
import { type CheckReportFacts, junitOf } from "../../src/report/from-checks.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { xsdErrors } from "../helpers/junit-xsd.js";
import { tempDir } from "../helpers/tmp.js";

const dir = tempDir("junit");
const log = join(dir, "gpu0-gi1-ci0.stress.1.log");
writeFileSync(log, `${Array.from({ length: 100 }, (_, i) => `line ${i + 1} <&>`).join("\n")}\n`);

function rec(p: Partial<CheckRecord> & Pick<CheckRecord, "suite" | "title">): CheckRecord {
  return {
    id: p.title,
    node: "sim01",
    gpu: 0,
    instance: null,
    fullTitle: `${p.suite} › ${p.title}`,
    status: "passed",
    code: "OK",
    message: "",
    figures: {},
    evidence: [],
    steps: [],
    parameters: {},
    startMs: 1000,
    stopMs: 2500,
    ...p,
  };
}

const inst = {
  node: "sim01",
  gpu: 0,
  gpuUuid: "GPU-1",
  gpuName: "NVIDIA H100 80GB HBM3",
  uuid: "MIG-1",
  profile: "3g.40gb",
  gpuInstanceId: 1,
  computeInstanceId: 0,
  placement: "4:4",
  sm: 60,
  memoryMiB: 40000,
};

const facts: CheckReportFacts = {
  runId: "sc-test",
  label: null,
  exitCode: 1,
  interrupted: false,
  suites: ["stress", "isolation"],
  layout: { file: "fixtures/layouts/default.yaml", config: "all-balanced" },
  checks: [
    rec({
      suite: "stress",
      title: "computes",
      instance: { profile: "3g.40gb", placement: "4:4", label: "gpu0/gi1/ci0", uuid: "MIG-1" },
      evidence: [{ name: "workload log", path: log, contentType: "text/plain" }],
      status: "failed",
      code: "STRESS_SHARE",
      message: "below its share\u0007",
    }),
    rec({ suite: "isolation", title: "oom: recovered", status: "broken", code: "CONNECTION_LOST" }),
    rec({ suite: "isolation", title: "oom: xidAttributed", status: "skipped", code: "SKIPPED" }),
    rec({
      suite: "run",
      title: "the node can be checked",
      node: "sim02",
      gpu: null,
      status: "broken",
      code: "CONNECT",
    }),
  ],
  nodes: [
    { node: "sim01", driver: "580.65.06", cuda: "13.0", instances: [inst], error: null },
    { node: "sim02", driver: null, cuda: null, instances: [], error: "[CONNECT] refused" },
  ],
  history: join(dir, "history.jsonl"),
  outDir: dir,
  allure: false,
  executor: { name: "local" },
};

describe("junit.xml (check records → Jenkins xunit JUnit)", () => {
  const xml = junitOf(facts);
  const file = join(dir, "junit.xml");
  writeFileSync(file, xml);

  it("validates against junit-10.xsd", () => {
    assert.equal(xsdErrors(file), null);
  });

  it("xmllint does reject a file that breaks the schema (the validation can fail)", () => {
    const bad = join(dir, "bad.xml");
    // junit-10.xsd allows no `skipped` attribute on <testsuites>.
    writeFileSync(bad, xml.replace(/<testsuites /, '<testsuites skipped="1" '));
    assert.match(xsdErrors(bad) ?? "", /skipped/);
  });

  it("each testsuite carries its nodes' driver, layout and route as properties", () => {
    const stress = /<testsuite name="stress"[\s\S]*?<\/testsuite>/.exec(xml)![0];
    assert.match(stress, /<property name="sim01\.driver" value="580\.65\.06"\/>/);
    assert.match(
      stress,
      /<property name="sim01\.layout" value="fixtures\/layouts\/default\.yaml -c all-balanced: 3g\.40gb@4:4"\/>/,
    );
    assert.match(stress, /<property name="sim01\.route" value="GPU 0: MIG, 1 instance\(s\)"\/>/);
    assert.doesNotMatch(stress, /sim02\./, "only the nodes the suite's checks ran on");
    const run = /<testsuite name="run"[\s\S]*?<\/testsuite>/.exec(xml)![0];
    assert.match(run, /name="sim02\.route" value="could not be checked: \[CONNECT\] refused"/);
  });

  it("a check with a workload log gets its last 40 lines, escaped, as system-out", () => {
    const out = /<system-out>([\s\S]*?)<\/system-out>/.exec(xml)![1]!;
    const lines = out.split("\n");
    assert.match(lines[0]!, /\(last 40 of 100 lines\)$/);
    assert.equal(lines.length, 41);
    assert.equal(lines[1], "line 61 &lt;&amp;&gt;");
    assert.equal(lines[40], "line 100 &lt;&amp;&gt;");
    assert.equal((xml.match(/<system-out>/g) ?? []).length, 1, "only checks with a log");
  });

  it("failed → failure with its code as type, broken → error, skipped → skipped; times in seconds", () => {
    assert.match(xml, /<failure message="below its share" type="STRESS_SHARE">/);
    assert.match(xml, /<error message="" type="CONNECTION_LOST">/);
    assert.match(xml, /<skipped message=""\/>/);
    assert.match(xml, /<testsuites [^>]*tests="4" failures="1" errors="2" time="[\d.]+">/);
    assert.match(xml, /time="1\.500"/);
  });

  it("suite times are wall times that add up to at most the run's, never sums of parallel checks", () => {
    // One isolation scenario of 60 s judged by four verdicts (four checks over the same
    // seconds), then a health check, in a run of 62 s: the isolation suite took 60 s, not 240.
    const at = (startS: number, stopS: number) => ({
      startMs: 100_000 + startS * 1000,
      stopMs: 100_000 + stopS * 1000,
    });
    const verdicts = ["victimsUnaffected", "faultContained", "xidAttributed", "recovered"];
    const run = junitOf({
      ...facts,
      startedMs: 100_000,
      finishedMs: 162_000,
      checks: [
        ...verdicts.map((v) => rec({ suite: "isolation", title: `oom: ${v}`, ...at(1, 61) })),
        rec({ suite: "health", title: "driver answers", ...at(61, 61.5) }),
        rec({ suite: "health", title: "no new Xid", ...at(61.2, 61.8) }),
      ],
    });
    const time = (name: string) =>
      Number(new RegExp(`<testsuite name="${name}"[^>]* time="([\\d.]+)"`).exec(run)![1]);
    const whole = Number(/<testsuites [^>]*time="([\d.]+)"/.exec(run)![1]);
    assert.equal(whole, 62);
    assert.equal(time("isolation"), 60);
    assert.equal(time("health"), 0.8);
    assert.ok(time("isolation") + time("health") <= whole);
    // Each testcase keeps its own span.
    assert.equal((run.match(/name="isolation › oom: \w+" time="60\.000"/g) ?? []).length, 4);
  });

  it("classnames and Allure history ids survive a destroy and re-create of the same layout", () => {
    // The same layout applied twice: the same profiles at the same placements, but the driver
    // hands out new GI/CI ids (gi1/ci0 became gi7/ci2, gi2 became gi9).
    const layoutRun = (ids: [string, string]) => [
      rec({
        suite: "stress",
        title: "3g.40gb at 4:4 computes",
        instance: { profile: "3g.40gb", placement: "4:4", label: `gpu0/${ids[0]}`, uuid: "MIG-a" },
      }),
      rec({
        suite: "stress",
        title: "1g.10gb at 0:1 computes",
        instance: { profile: "1g.10gb", placement: "0:1", label: `gpu0/${ids[1]}`, uuid: "MIG-b" },
      }),
    ];
    const first = layoutRun(["gi1/ci0", "gi2/ci0"]);
    const again = layoutRun(["gi7/ci2", "gi9/ci0"]);
    const classnames = (checks: CheckRecord[]) =>
      [...junitOf({ ...facts, checks }).matchAll(/<testcase classname="([^"]*)"/g)].map(
        (m) => m[1],
      );
    assert.deepEqual(classnames(again), classnames(first));
    assert.deepEqual(classnames(first), [
      "stress.sim01.gpu0.3g_40gb@4",
      "stress.sim01.gpu0.1g_10gb@0",
    ]);
    for (const c of classnames(first)) assert.doesNotMatch(c!, /\/|gi\d|ci\d/);
    // Two instances of the layout still tell apart.
    assert.notEqual(classnames(first)[0], classnames(first)[1]);
    const history = (checks: CheckRecord[]) => checks.map((c) => allureResultOf(c).historyId);
    assert.deepEqual(history(again), history(first));
    assert.notEqual(history(first)[0], history(first)[1]);
  });

  it("each testsuite carries its start as an ISO 8601 timestamp", () => {
    const run = junitOf({
      ...facts,
      checks: [
        rec({ suite: "health", title: "a", startMs: Date.UTC(2026, 11, 3, 20, 52, 21, 400) }),
        rec({ suite: "health", title: "b", startMs: Date.UTC(2026, 11, 3, 20, 52, 19, 900) }),
        rec({ suite: "stress", title: "c", startMs: Date.UTC(2026, 11, 3, 21, 0, 0) }),
      ],
    });
    assert.match(run, /<testsuite name="health" timestamp="2026-12-03T20:52:19Z" /);
    assert.match(run, /<testsuite name="stress" timestamp="2026-12-03T21:00:00Z" /);
  });
});
