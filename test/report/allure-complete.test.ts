// The Allure results made to match the check records one to one (a check no test wrote gets a
// result, a result's status is its record's), and checks.jsonl read back as the one source:
// `slicecheck report` on a run refuses what has no records, and counts what they say.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { completeAllureResults } from "../../src/report/allure-complete.js";
import { readChecks, readRunContext } from "../../src/report/context.js";
import { type CheckRecord, countOf } from "../../src/verdicts/checks.js";
import { tempDir } from "../helpers/tmp.js";

function rec(id: string, status: CheckRecord["status"], suite = "stress"): CheckRecord {
  return {
    id,
    suite,
    node: "sim01",
    gpu: 0,
    instance: null,
    title: `check ${id}`,
    fullTitle: `check ${id}`,
    status,
    code: status === "passed" ? "OK" : status === "skipped" ? "SKIPPED" : "X",
    message: status === "passed" ? "" : `why ${id}`,
    figures: {},
    evidence: [],
    steps: [{ name: "victims under load", status: "failed", startMs: 1, stopMs: 2 }],
    parameters: {},
    startMs: 1,
    stopMs: 2,
  };
}

const results = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith("-result.json"))
    .map(
      (f) =>
        JSON.parse(readFileSync(join(dir, f), "utf8")) as {
          status: string;
          statusDetails?: { message?: string };
          parameters: { name: string; value: string }[];
          steps: { name: string; status: string }[];
        },
    );
const idOf = (r: ReturnType<typeof results>[number]) =>
  r.parameters.find((p) => p.name === "check")?.value;

describe("Allure results completed from the check records", () => {
  it("writes a result for each check no test wrote and gives each result its record's status", () => {
    const dir = tempDir("allure-complete");
    // What allure-mocha wrote: c1 (as passed, though its record is broken) and c2.
    const written = (id: string, status: string) =>
      writeFileSync(
        join(dir, `${id}-result.json`),
        JSON.stringify({ status, parameters: [{ name: "check", value: id }], steps: [] }),
      );
    written("c1", "passed");
    written("c2", "failed");
    const checks = [
      rec("c1", "broken"),
      rec("c2", "failed"),
      rec("c3", "broken", "run"),
      rec("c4", "skipped"),
    ];
    assert.equal(completeAllureResults(dir, checks), 3);
    const all = results(dir);
    assert.deepEqual(all.map(idOf).sort(), ["c1", "c2", "c3", "c4"]);
    const by = new Map(all.map((r) => [idOf(r), r]));
    assert.equal(by.get("c1")?.status, "broken");
    assert.equal(by.get("c1")?.statusDetails?.message, "[X] why c1");
    assert.equal(by.get("c3")?.status, "broken");
    assert.equal(by.get("c4")?.status, "skipped");
    // A written result carries the record's steps with their own statuses.
    assert.deepEqual(
      by.get("c3")?.steps.map((s) => [s.name, s.status]),
      [["victims under load", "failed"]],
    );
    // Run again: nothing is left to add or align.
    assert.equal(completeAllureResults(dir, checks), 0);
  });

  it("readRunContext: run.json's facts with checks.jsonl's records; no records, no report", () => {
    const out = tempDir("run-context");
    const facts = {
      runId: "sc-1",
      label: null,
      startedAt: "2026-12-01T00:00:00Z",
      finishedAt: "2026-12-01T00:01:00Z",
      durationS: 60,
      exitCode: 2,
      layout: null,
      suites: ["stress"],
      nodes: [],
    };
    writeFileSync(join(out, "run.json"), JSON.stringify(facts));
    assert.throws(() => readRunContext(out), /checks\.jsonl.*missing/);
    const lines = [rec("c1", "passed"), rec("c2", "skipped"), rec("c3", "broken")].map((c) =>
      JSON.stringify(c),
    );
    // The last line cut short by an interrupt is left out; every whole line counts.
    writeFileSync(join(out, "checks.jsonl"), `${lines.join("\n")}\n{"id":"c4","sta`);
    const ctx = readRunContext(out);
    assert.deepEqual(countOf(ctx.allChecks), { passed: 1, failed: 0, broken: 1, skipped: 1 });
    assert.equal(ctx.runId, "sc-1");
    // A broken line in the middle is bad input, named by its line.
    const bad = join(out, "bad.jsonl");
    writeFileSync(bad, `${lines[0]}\nnot json\n${lines[1]}\n`);
    assert.throws(() => readChecks(bad), /bad\.jsonl.*line 2/);
    // An older run (rows, no records) is refused with what to do.
    const old = join(out, "old");
    mkdirSync(old);
    writeFileSync(join(old, "run.json"), JSON.stringify({ ...facts, rows: [] }));
    assert.throws(() => readRunContext(old), /older than its check records; rerun it/);
  });
});
