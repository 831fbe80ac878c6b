// The end of `slicecheck run` from check records: each failed and broken check with where,
// code, reason and evidence (its own file, else its id in checks.jsonl), the per-node table,
// the counts, and the verdict as the last line; colour only on a terminal without NO_COLOR.
import assert from "node:assert/strict";
import { printEnd } from "../../src/cli/commands/run-print.js";
import type { Out } from "../../src/cli/context.js";
import type { HarnessRunResult } from "../../src/harness/run.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";

function check(p: Partial<CheckRecord>): CheckRecord {
  return {
    id: "c0001",
    suite: "stress",
    node: "sim01",
    gpu: 0,
    instance: { profile: "1g.10gb", placement: "6:1", label: "gpu0/gi13/ci0", uuid: "MIG-x" },
    title: "computes without errors for the whole duration",
    fullTitle: "",
    status: "passed",
    code: "OK",
    message: "",
    figures: {},
    evidence: [],
    steps: [],
    parameters: {},
    startMs: 0,
    stopMs: 0,
    ...p,
  };
}

function printed(r: Partial<HarnessRunResult>, tty = false): string[] {
  const lines: string[] = [];
  const io: Out = { out: (l) => lines.push(...l.split("\n")), err: () => {}, outTty: tty };
  const result: HarnessRunResult = {
    runId: "sc-1",
    exitCode: 1,
    interrupted: false,
    checks: [],
    nodes: [],
    outDir: "/tmp/run",
    ...r,
  };
  printEnd(result, { runId: "sc-1", outDir: "/tmp/run", allure: false }, io);
  return lines;
}

describe("the end of run (run-print)", () => {
  const checks = [
    check({
      id: "c0001",
      status: "failed",
      code: "STRESS_FAILED",
      message: "sim01 gpu0/gi13/ci0 (1g.10gb): exit 137",
      evidence: [
        { name: "workload log", path: "/tmp/run/sim01/gpu0.stress.1.log", contentType: "" },
      ],
    }),
    check({
      id: "c0002",
      node: "sim02",
      gpu: null,
      instance: null,
      suite: "run",
      title: "the node can be checked",
      status: "broken",
      code: "CONNECT",
      message: "connection refused",
    }),
    check({ id: "c0003", node: "sim02", status: "passed" }),
  ];

  it("lists each check that did not pass with where, code, reason and evidence; the verdict last", () => {
    const lines = printed({ checks });
    const i = lines.indexOf(
      "  FAILED [STRESS_FAILED] stress sim01 GPU 0 1g.10gb@6:1: computes without errors for the whole duration",
    );
    assert.ok(i >= 0, lines.join("\n"));
    assert.equal(lines[i + 1], "      sim01 gpu0/gi13/ci0 (1g.10gb): exit 137");
    assert.equal(lines[i + 2], "      evidence: /tmp/run/sim01/gpu0.stress.1.log");
    const j = lines.indexOf("  BROKEN [CONNECT] run sim02: the node can be checked");
    assert.ok(j > i, lines.join("\n"));
    // No file of its own: the check's record, by id.
    assert.equal(lines[j + 2], "      evidence: /tmp/run/checks.jsonl (check c0002)");
    assert.ok(lines.includes("sim01  0       1       0       0"), lines.join("\n"));
    assert.ok(lines.includes("sim02  1       0       1       0"), lines.join("\n"));
    assert.equal(lines.at(-2), "1 passed, 1 failed, 1 broken, 0 skipped");
    assert.equal(lines.at(-1), "run sc-1: FAILED: a check failed (see above)");
  });

  it("an interrupted run says so in its last line; a passing one prints no failure list", () => {
    assert.match(printed({ checks, interrupted: true, exitCode: 130 }).at(-1)!, /INTERRUPTED/);
    const ok = printed({ checks: [checks[2]!], exitCode: 0 });
    assert.ok(!ok.some((l) => l.includes("did not pass")));
    assert.equal(ok.at(-1), "run sc-1: PASSED: every check passed");
  });

  it("colours the verdict and marks on a terminal only, and never with NO_COLOR", () => {
    const saved = process.env.NO_COLOR;
    try {
      delete process.env.NO_COLOR;
      assert.match(printed({ checks }, true).at(-1)!, /\x1b\[31m/);
      assert.doesNotMatch(printed({ checks }, false).join("\n"), /\x1b\[/);
      process.env.NO_COLOR = "1";
      assert.doesNotMatch(printed({ checks }, true).join("\n"), /\x1b\[/);
    } finally {
      if (saved === undefined) delete process.env.NO_COLOR;
      else process.env.NO_COLOR = saved;
    }
  });
});
