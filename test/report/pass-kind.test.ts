// A passed check's kind (measured, characterised, documented-constraint) is set through the
// suite API, carried on the record, and read by every report from the record's kind: the
// sign-off's rows and scenario counts, the coverage ledger, the Allure figures page and tag,
// verdicts.json and the terminal's notes. Each report is shown reading the kind and not the
// code: a record planted with kind characterised and code OK reads as a characterisation, and
// one with code CHARACTERISED but kind measured reads as a kept promise.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { kindNotes } from "../../src/cli/commands/run-print.js";
import type { RunOptionsView } from "../../src/harness/api-types.js";
import { HarnessContext, type RunServices } from "../../src/harness/context.js";
import { enrichAllureResults } from "../../src/report/allure-extra.js";
import type { RunContext } from "../../src/report/context.js";
import { writeCheckReports } from "../../src/report/from-checks.js";
import { figuresPage } from "../../src/report/signoff/figures.js";
import { signoffHtml } from "../../src/report/signoff/html.js";
import { scenariosOf } from "../../src/report/signoff/isolation.js";
import { checkResult } from "../../src/report/signoff/model.js";
import { type CheckRecord, CheckSink } from "../../src/verdicts/checks.js";
import { scenarioCoverage } from "../../src/verdicts/coverage.js";
import { tempDir } from "../helpers/tmp.js";

let n = 0;
function check(p: Partial<CheckRecord>): CheckRecord {
  n++;
  return {
    id: `c${n}`,
    suite: "isolation",
    node: "sim01",
    gpu: 0,
    instance: null,
    title: "oom: victimsUnaffected",
    fullTitle: "oom: victimsUnaffected",
    status: "passed",
    kind: "measured",
    code: "OK",
    message: "the victims kept their throughput",
    figures: {},
    evidence: [],
    steps: [],
    parameters: { mode: "mig", route: "MIG", fault: "oom", aggressor: "gpu0/gi1/ci0" },
    startMs: 0,
    stopMs: 1,
    ...p,
  };
}

/** The four verdicts of one scenario, victimsUnaffected as `victim` says. */
const scenario = (victim: Partial<CheckRecord>) =>
  ["victimsUnaffected", "faultContained", "xidAttributed", "recovered"].map((v) =>
    check({
      title: `oom: ${v}`,
      fullTitle: `oom: ${v}`,
      parameters: { ...check({}).parameters, verdict: v },
      ...(v === "victimsUnaffected" ? victim : {}),
    }),
  );

const ctx = (checks: CheckRecord[]): RunContext => ({
  runId: "sc-kind",
  label: null,
  startedAt: "2026-12-01T00:00:00Z",
  finishedAt: "2026-12-01T00:01:00Z",
  durationS: 60,
  exitCode: 0,
  layout: null,
  suites: ["isolation", "nccl"],
  nodes: [
    {
      node: "sim01",
      driver: "580.65.06",
      cuda: "13.0",
      gpus: [{ index: 0, name: "NVIDIA H100 80GB HBM3", uuid: "GPU-1" }],
      error: null,
      instances: [],
    },
  ],
  allChecks: checks,
});

/** A check as the suite API makes it: begin, what the test body calls, end. */
function made(body: (h: ReturnType<HarnessContext["current"]>) => void, err?: unknown) {
  const sink = new CheckSink();
  const hc = new HarnessContext(
    [],
    {} as RunOptionsView,
    sink,
    {} as RunServices,
    new Map(),
    new AbortController().signal,
  );
  hc.begin({
    suite: "site",
    node: null,
    gpu: null,
    instance: null,
    title: "t",
    fullTitle: "t",
    figures: {},
    evidence: [],
    steps: [],
    parameters: {},
  });
  body(hc.current());
  return hc.end(err)!;
}

describe("a passed check's kind, from the suite API to the reports", () => {
  it("the suite API records the kind with its code; the old passCode sets it too", () => {
    const pick = (c: CheckRecord) => [c.status, c.kind, c.code];
    assert.deepEqual(pick(made(() => {})), ["passed", "measured", "OK"]);
    assert.deepEqual(pick(made((h) => h.passKind("characterised"))), [
      "passed",
      "characterised",
      "CHARACTERISED",
    ]);
    assert.deepEqual(pick(made((h) => h.passCode("DOCUMENTED_CONSTRAINT"))), [
      "passed",
      "documented-constraint",
      "DOCUMENTED_CONSTRAINT",
    ]);
    assert.deepEqual(pick(made((h) => h.passCode("SITE_RULE"))), [
      "passed",
      "measured",
      "SITE_RULE",
    ]);
    // A characterisation's code always says its kind, so a database row (code, no kind) does.
    const both = made((h) => {
      h.passCode("SITE_RULE");
      h.passKind("characterised");
    });
    assert.deepEqual(pick(both), ["passed", "characterised", "CHARACTERISED"]);
    const failed = made(
      (h) => h.passKind("characterised"),
      Object.assign(new Error("leak"), { name: "AssertionError" }),
    );
    assert.deepEqual(pick(failed), ["failed", undefined, "ASSERTION"]);
  });

  it("a characterised scenario verifies no isolation: the matrix and the ledger read the kind", () => {
    const kept = scenario({});
    const soft = scenario({ kind: "characterised" });
    const coded = scenario({ code: "CHARACTERISED", kind: "measured" });
    assert.equal(scenariosOf(kept, "sim01", 0)[0]!.allPassed, true);
    assert.equal(scenariosOf(soft, "sim01", 0)[0]!.allPassed, false);
    assert.equal(scenariosOf(coded, "sim01", 0)[0]!.allPassed, true, "the code is not read");
    assert.equal(scenarioCoverage(kept, "sim01", 0)[0]!.passed, true);
    assert.equal(scenarioCoverage(soft, "sim01", 0)[0]!.passed, false);
    assert.equal(scenarioCoverage(coded, "sim01", 0)[0]!.passed, true);
  });

  it("the sign-off's rows and evidence name a characterisation and a documented constraint", () => {
    const soft = check({ kind: "characterised", title: "noisy: victimsUnaffected" });
    const nccl = check({ suite: "nccl", kind: "documented-constraint", title: "cross", code: "X" });
    const kept = check({ code: "CHARACTERISED", title: "kept" });
    assert.deepEqual([soft, nccl, kept].map(checkResult), [
      "PASS (characterised)",
      "PASS (documented constraint)",
      "PASS",
    ]);
    assert.equal(checkResult(check({ status: "failed", kind: undefined })), "FAIL");
    const html = signoffHtml(ctx([soft, nccl, kept]), null);
    assert.match(html, /<td class="res">PASS \(characterised\)<\/td>/);
    assert.match(html, /<td class="res">PASS \(documented constraint\)<\/td>/);
    assert.match(html, /isolation: kept: PASS <\/h4>/);
  });

  it("the Allure figures page says the kind, and the result is tagged with it", () => {
    const soft = check({ kind: "characterised" });
    const kept = check({ code: "CHARACTERISED" });
    assert.match(
      figuresPage(soft),
      /class="kind">a characterisation: the route&apos;s expected weakness/,
    );
    assert.doesNotMatch(figuresPage(kept), /characterisation/);
    const dir = tempDir("pass-kind-allure");
    for (const c of [soft, kept])
      writeFileSync(
        join(dir, `${c.id}-result.json`),
        JSON.stringify({ status: "passed", parameters: [{ name: "check", value: c.id }] }),
      );
    enrichAllureResults(dir, ctx([soft, kept]));
    const labels = (c: CheckRecord) =>
      (
        JSON.parse(readFileSync(join(dir, `${c.id}-result.json`), "utf8")) as {
          labels?: { name: string; value: string }[];
        }
      ).labels ?? [];
    assert.deepEqual(labels(soft), [{ name: "tag", value: "characterised" }]);
    assert.deepEqual(labels(kept), []);
  });

  it("verdicts.json's characterisation and the terminal's notes count the kinds", () => {
    const soft = check({ kind: "characterised" });
    const kept = check({ code: "CHARACTERISED" });
    const nccl = check({ suite: "nccl", kind: "documented-constraint" });
    const out = tempDir("pass-kind-reports");
    writeCheckReports({
      runId: "sc-kind",
      label: null,
      exitCode: 0,
      interrupted: false,
      suites: ["isolation", "nccl"],
      layout: null,
      checks: [soft, kept, nccl],
      nodes: [],
      history: "",
      outDir: out,
      allure: false,
      executor: {},
    });
    const rows = (
      JSON.parse(readFileSync(join(out, "verdicts.json"), "utf8")) as {
        rows: { characterisation: boolean }[];
      }
    ).rows;
    assert.deepEqual(
      rows.map((r) => r.characterisation),
      [true, false],
    );
    const notes = kindNotes([soft, kept, nccl]);
    assert.equal(notes.length, 2);
    assert.match(notes[0]!, /^note: 1 passed check\(s\) are characterisations: .*soft routes/);
    assert.match(notes[1]!, /^note: 1 passed check\(s\) are documented constraints/);
    assert.deepEqual(kindNotes([kept]), [], "no kind, no note");
  });
});
