// The sign-off model on hand-made check records: the headline's three answers, the route, the
// tenants and how many were verified isolated, and each requirement's result.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FAULTS } from "../../src/chaos/history.js";
import { printEnd, printJson } from "../../src/cli/commands/run-print.js";
import { complianceHtml } from "../../src/report/compliance.js";
import type { ContextInstance, RunContext } from "../../src/report/context.js";
import { scenariosOf } from "../../src/report/signoff/isolation.js";
import { signoffModel } from "../../src/report/signoff/model.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { DEFAULT_POLICY } from "../../src/verdicts/coverage.js";
import { CONFINEMENT_TITLE } from "../../src/verdicts/slurm.js";
import { tempDir } from "../helpers/tmp.js";

let n = 0;
function check(p: Partial<CheckRecord> & Pick<CheckRecord, "suite" | "title">): CheckRecord {
  n++;
  return {
    id: `c${n}`,
    node: "sim01",
    gpu: 0,
    instance: null,
    fullTitle: p.title,
    status: "passed",
    code: "OK",
    message: "",
    figures: {},
    evidence: [],
    steps: [],
    parameters: {},
    startMs: 0,
    stopMs: 1,
    ...p,
  };
}

const inst = (label: string, profile: string, placement: string): ContextInstance => ({
  gpu: 0,
  label,
  profile,
  placement,
  sm: 16,
  uuid: `MIG-${label}`,
  mig: true,
});
const A = inst("gpu0/gi1/ci0", "3g.40gb", "4:4");
const B = inst("gpu0/gi2/ci0", "3g.40gb", "0:4");

/** Every fault kind, health and layout assessed, 30 s windows: what the default policy asks. */
const FULL_SCOPE: RunContext["scope"] = {
  windowS: 30,
  faults: [...FAULTS],
  aggressors: null,
  policy: DEFAULT_POLICY,
};

function ctx(
  checks: CheckRecord[],
  instances: ContextInstance[] = [A, B],
  scope: RunContext["scope"] | null = FULL_SCOPE,
): RunContext {
  return {
    ...(scope ? { scope } : {}),
    runId: "sc-test",
    label: null,
    startedAt: "2026-12-01T00:00:00Z",
    finishedAt: "2026-12-01T00:01:00Z",
    durationS: 60,
    exitCode: 0,
    layout: { file: "l.yaml", config: "two-3g" },
    suites: [...new Set(checks.map((c) => c.suite))],
    nodes: [
      {
        node: "sim01",
        driver: "580.65.06",
        cuda: "13.0",
        gpus: [{ index: 0, name: "NVIDIA H100 80GB HBM3", uuid: "GPU-1" }],
        error: null,
        instances,
      },
    ],
    allChecks: checks,
  };
}

const stress = (i: ContextInstance, status: CheckRecord["status"] = "passed") =>
  check({
    suite: "stress",
    title: "computes without errors for the whole duration",
    instance: { profile: i.profile, placement: i.placement, label: i.label, uuid: i.uuid },
    status,
    figures: { tflops: 8, sm: 16 },
  });

function isolation(
  aggressor: ContextInstance,
  victim: ContextInstance,
  ok = true,
  fault = "oom",
  all: ContextInstance[] = [aggressor, victim],
): CheckRecord[] {
  const victims = all.filter((x) => x !== aggressor);
  const params = (verdict: string) => ({
    mode: "mig",
    route: "MIG",
    fault,
    aggressor: aggressor.label,
    profile: aggressor.profile,
    verdict,
  });
  return ["victimsUnaffected", "faultContained", "xidAttributed", "recovered"].map((v) =>
    check({
      suite: "isolation",
      title: `${fault}: ${v}`,
      status: v === "victimsUnaffected" && !ok ? "failed" : "passed",
      parameters: params(v),
      figures:
        v === "victimsUnaffected"
          ? Object.fromEntries([
              ["tolerance", 0.05],
              ...victims.flatMap((x) => [
                [`${x.label} baseline TFLOP/s`, 30],
                [`${x.label} under fault TFLOP/s`, ok || x !== victim ? 30 : 15],
              ]),
            ])
          : {},
    }),
  );
}

const layout = () => check({ suite: "layout", title: "matches config two-3g", gpu: null });
const health = (status: CheckRecord["status"] = "passed") =>
  check({ suite: "health", title: "driver answers", status });

/** Every instance the aggressor once, for every fault kind: what the default policy asks. */
function allScenarios(list: ContextInstance[], faults: readonly string[] = FAULTS): CheckRecord[] {
  return list.flatMap((a) =>
    faults.flatMap((f) => isolation(a, list.find((x) => x !== a)!, true, f, list)),
  );
}

/** `aggressors` each faulting, for every kind, on a GPU holding `all`. */
function allScenarios2(aggressors: ContextInstance[], all: ContextInstance[]): CheckRecord[] {
  return aggressors.flatMap((a) =>
    FAULTS.flatMap((f) => isolation(a, all.find((x) => x !== a)!, true, f, all)),
  );
}

/** The slurm suite's confinement check on sim01: passed, or not assessed (no scheduler). */
const confinement = (status: CheckRecord["status"] = "passed") =>
  check({
    suite: "slurm",
    title: CONFINEMENT_TITLE,
    gpu: null,
    status,
    code:
      status === "skipped" ? "NOT_ASSESSED" : status === "failed" ? "TENANT_NOT_CONFINED" : "OK",
  });

const full = () => [
  layout(),
  health(),
  stress(A),
  stress(B),
  ...allScenarios([A, B]),
  confinement(),
];

describe("sign-off model", () => {
  it("stress only on a MIG GPU: PARTIAL, naming the GPU isolation was not assessed on", () => {
    const m = signoffModel(ctx([stress(A), stress(B)]));
    assert.equal(m.headline, "PARTIAL");
    assert.equal(m.reasons[0], "isolation not assessed on sim01 GPU 0");
    assert.match(m.tagline, /^tested 0 of 10 fault scenarios/);
    const iso = m.requirements.find((r) => r.key === "isolation")!;
    assert.equal(iso.result, "NOT ASSESSED");
    assert.equal(m.requirements.find((r) => r.key === "stress")!.result, "PASS");
    assert.equal(m.requirements.find((r) => r.key === "layout")!.result, "NOT ASSESSED");
    assert.equal(m.gpus[0]!.route, "MIG");
    assert.equal(m.gpus[0]!.tenants, 2);
    assert.equal(m.gpus[0]!.verified, 0);
  });

  it("full coverage under the default policy and nothing failed: COMPLIANT, both tenants verified", () => {
    const m = signoffModel(ctx(full()));
    assert.equal(m.headline, "COMPLIANT", m.reasons.join("; "));
    assert.equal(m.tagline, "tested 10 of 10 fault scenarios the policy asks; every check passed");
    assert.equal(m.gpus[0]!.verified, 2);
    assert.equal(m.gpus[0]!.aggressors, 2);
    assert.ok(m.judgement.items.every((i) => i.met));
    assert.equal(m.requirements.find((r) => r.key === "isolation:oom")!.result, "PASS");
    assert.match(
      m.requirements.find((r) => r.key === "isolation:oom")!.coverage,
      /aggressors 2 of 2; fault oom; route MIG; window 30 s/,
    );
  });

  // Each plants one gap in the full run above: all passed, so only coverage can refuse it.
  const gaps: [string, () => RunContext, RegExp, string][] = [
    [
      "one aggressor of two",
      () => ctx([layout(), health(), ...allScenarios([A])]),
      /aggressors 1 of 2/,
      "tested 5 of 10",
    ],
    [
      "two fault kinds of five",
      () => ctx([layout(), health(), ...allScenarios([A, B], ["crash", "oom"])]),
      /fault kinds 2 of 5 \(not run: kill, hang, noisy\)/,
      "tested 4 of 10",
    ],
    [
      "health never assessed",
      () => ctx(full().filter((c) => c.suite !== "health")),
      /not covered: health not run/,
      "tested 10 of 10",
    ],
    [
      "health broken (not decided)",
      () => ctx([...full().filter((c) => c.suite !== "health"), health("broken")]),
      /health not assessed/,
      "tested 10 of 10",
    ],
    [
      "layout never assessed",
      () => ctx(full().filter((c) => c.suite !== "layout")),
      /layout not run/,
      "tested 10 of 10",
    ],
    [
      "the slurm suite not run: tenant confinement not assessed",
      () => ctx(full().filter((c) => c.suite !== "slurm")),
      /not covered: tenant confinement: NOT ASSESSED — sim01: slurm suite not run; how to assess: --suites slurm/,
      "tested 10 of 10",
    ],
    [
      "no scheduler on the node: confinement skipped NOT_ASSESSED",
      () => ctx([...full().filter((c) => c.suite !== "slurm"), confinement("skipped")]),
      /tenant confinement: NOT ASSESSED — sim01: no scheduler \(no slurm_node\)/,
      "tested 10 of 10",
    ],
    [
      "2 s windows",
      () => ctx(full(), [A, B], { ...FULL_SCOPE!, windowS: 2 }),
      /windows of 2 s, the policy asks at least 30 s/,
      "tested 10 of 10",
    ],
    [
      "an older run.json (window unknown)",
      () => ctx(full(), [A, B], null),
      /window length unknown/,
      "tested 10 of 10",
    ],
  ];
  for (const [what, make, reason, tested] of gaps)
    it(`partial coverage (${what}): PARTIAL, never COMPLIANT, saying what is missing`, () => {
      const m = signoffModel(make());
      assert.equal(m.headline, "PARTIAL");
      assert.match(m.reasons.join("\n"), reason);
      assert.ok(m.tagline.startsWith(tested), m.tagline);
    });

  it("tenant confinement: a row on every page, NOT ASSESSED with why and how; waived only by a named policy", () => {
    const none = signoffModel(ctx(full().filter((c) => c.suite !== "slurm")));
    const row = none.requirements.find((r) => r.key === "confinement")!;
    assert.equal(row.result, "NOT ASSESSED");
    assert.match(row.coverage, /sim01: slurm suite not run; how to assess: --suites slurm/);
    const item = none.judgement.items.find((i) => i.key === "confinement")!;
    assert.deepEqual([item.met, item.tested, item.required], [false, 0, 1]);
    // The page says it in the reasons and in the scope's "what did not".
    const html = complianceHtml(ctx(full().filter((c) => c.suite !== "slurm")), null);
    assert.match(html, /tenant confinement: NOT ASSESSED — sim01: slurm suite not run/);
    assert.match(html, /tenant confinement NOT ASSESSED on sim01 \(slurm suite not run\)/);
    // Assessed: the row passes, and the full run is COMPLIANT (the test above).
    const ok = signoffModel(ctx(full()));
    assert.equal(ok.requirements.find((r) => r.key === "confinement")!.result, "PASS");
    assert.match(
      ok.requirements.find((r) => r.key === "confinement")!.coverage,
      /^assessed on sim01$/,
    );
    // A site that waives it (signoff: confinement: false) may sign without it, and the row
    // still says NOT ASSESSED, naming the waiver.
    const policy = { ...DEFAULT_POLICY, source: "slicecheck.config.yaml:2", confinement: false };
    const waived = signoffModel(
      ctx(
        full().filter((c) => c.suite !== "slurm"),
        [A, B],
        { ...FULL_SCOPE!, policy },
      ),
    );
    assert.equal(waived.headline, "COMPLIANT", waived.reasons.join("; "));
    const w = waived.requirements.find((r) => r.key === "confinement")!;
    assert.equal(w.result, "NOT ASSESSED");
    assert.match(
      w.coverage,
      /slurm suite not run.*; waived by the policy \(slicecheck\.config\.yaml:2\)$/,
    );
    // A job that reaches a neighbour: the row fails and the run is NOT COMPLIANT.
    const bad = signoffModel(
      ctx([...full().filter((c) => c.suite !== "slurm"), confinement("failed")]),
    );
    assert.equal(bad.headline, "NOT COMPLIANT");
    assert.equal(bad.requirements.find((r) => r.key === "confinement")!.result, "FAIL");
  });

  it("a victim-only instance is not verified isolated, nor an aggressor that was never a victim", () => {
    const C = inst("gpu0/gi3/ci0", "1g.10gb", "2:1");
    // A and B each the aggressor for every fault kind (C their victim too); C never the aggressor.
    const m = signoffModel(
      ctx([layout(), health(), ...allScenarios2([A, B], [A, B, C])], [A, B, C]),
    );
    assert.equal(m.gpus[0]!.verified, 2, "A and B: contained and survived; C: victim only");
    assert.equal(m.coverage.gpus[0]!.verified.includes(C.label), false);
    assert.equal(m.headline, "PARTIAL");
    // One aggressor of two: it never was a victim, and its victim never faulted: none verified.
    const one = signoffModel(ctx([layout(), health(), ...allScenarios([A])]));
    assert.equal(one.gpus[0]!.verified, 0);
  });

  it("a site policy (named on the page) can ask less: one aggressor, oom, 1 s windows → COMPLIANT", () => {
    const policy = {
      source: "slicecheck.config.yaml:3",
      name: "staging smoke",
      aggressors: 1,
      faults: ["oom"],
      suites: [],
      minWindowS: 1,
      confinement: false,
    };
    const m = signoffModel(
      ctx([stress(A), stress(B), ...isolation(A, B)], [A, B], {
        windowS: 2,
        faults: ["oom"],
        aggressors: 1,
        policy,
      }),
    );
    assert.equal(m.headline, "COMPLIANT", m.reasons.join("; "));
    assert.equal(m.policy.name, "staging smoke");
    assert.match(complianceHtml(ctx([]), null), /default: every instance an aggressor once/);
  });

  it("a failed check: NOT COMPLIANT, with where it failed; the victim is not verified isolated", () => {
    const m = signoffModel(ctx([...full(), stress(B, "failed"), ...isolation(A, B, false)]));
    assert.equal(m.headline, "NOT COMPLIANT");
    const iso = m.requirements.find((r) => r.key === "isolation:oom")!;
    assert.equal(iso.result, "FAIL");
    assert.deepEqual(iso.where, ["sim01 GPU 0"]);
    assert.equal(
      m.requirements.find((r) => r.key === "stress")!.where[0],
      "sim01 GPU 0 gpu0/gi2/ci0",
    );
    assert.equal(m.gpus[0]!.verified, 0);
  });

  it("a broken check keeps it from COMPLIANT (PARTIAL), and so does an unreachable node", () => {
    const broken = check({ suite: "stress", title: "computes", status: "broken", code: "X" });
    const m = signoffModel(ctx([...full(), broken]));
    assert.equal(m.headline, "PARTIAL");
    assert.match(m.reasons.join(";"), /1 check\(s\) broken.*sim01 GPU 0/);
    assert.equal(m.requirements.find((r) => r.key === "stress")!.result, "BROKEN");
    const c = ctx(full());
    c.nodes.push({ node: "sim03", driver: null, cuda: null, gpus: [], error: "[CONNECT] refused" });
    assert.equal(signoffModel(c).headline, "PARTIAL");
    assert.deepEqual(signoffModel(c).reasons, ["sim03 could not be checked"]);
  });

  it("whole GPUs only: route says no partitioning, and the page does not call it compliant", () => {
    const w: ContextInstance = { ...A, profile: "whole-gpu", placement: null, mig: false };
    const m = signoffModel(ctx([stress(w)], [w]));
    assert.equal(m.gpus[0]!.route, "whole GPU (no partitioning)");
    assert.equal(m.headline, "PARTIAL");
    assert.match(m.reasons.join("\n"), /no MIG-partitioned GPU was checked/);
  });

  it("users' suites are requirements of their own, grouped by suite", () => {
    const site = check({ suite: "./site.mjs", title: "memory", status: "failed", code: "SITE" });
    const m = signoffModel(ctx([...isolation(A, B), site]));
    const r = m.requirements.find((x) => x.key === "suite:./site.mjs")!;
    assert.equal(r.result, "FAIL");
    assert.equal(r.failed, 1);
  });

  it("a failed scenario colours only the victims it names or that lost throughput", () => {
    const C = inst("gpu0/gi3/ci0", "1g.10gb", "2:1");
    const v = check({
      suite: "isolation",
      title: "oom: victimsUnaffected",
      status: "failed",
      message: `sim01 GPU 0: victimsUnaffected (oom by ${A.label}): ${B.label} ran at 50.0% of its baseline`,
      parameters: { fault: "oom", aggressor: A.label, verdict: "victimsUnaffected" },
      figures: {
        tolerance: 0.05,
        [`${B.label} baseline TFLOP/s`]: 30,
        [`${B.label} under fault TFLOP/s`]: 15,
        [`${C.label} baseline TFLOP/s`]: 8,
        [`${C.label} under fault TFLOP/s`]: 8,
      },
    });
    const [s] = scenariosOf([v], "sim01", 0);
    assert.deepEqual(
      s!.victims.map((x) => [x.label, x.status]),
      [
        [B.label, "failed"],
        [C.label, "passed"],
      ],
    );
    assert.equal(s!.allPassed, false);
  });

  it("the end of `run` and `run --json` carry the page's headline, from the run.json it wrote", () => {
    const lines = (c: RunContext, json: boolean) => {
      const dir = tempDir("signoff-print");
      const { allChecks, ...facts } = c;
      writeFileSync(join(dir, "run.json"), JSON.stringify(facts));
      writeFileSync(
        join(dir, "checks.jsonl"),
        allChecks.map((x) => `${JSON.stringify(x)}\n`).join(""),
      );
      const out: string[] = [];
      const io = { out: (l: string) => out.push(...l.split("\n")), err: () => {} };
      const r = {
        runId: "sc-test",
        exitCode: 0,
        interrupted: false,
        checks: c.allChecks,
        nodes: [],
        outDir: dir,
      };
      if (json) printJson(r, "sc-test", io, dir);
      else printEnd(r, { runId: "sc-test", outDir: dir, allure: false }, io);
      return out;
    };
    const partial = lines(ctx([layout(), health(), ...allScenarios([A])]), false);
    assert.match(
      partial.join("\n"),
      /^sign-off: PARTIAL: tested 5 of 10 fault scenarios the policy asks \(policy: default\)$/m,
    );
    assert.match(partial.join("\n"), /^ {2}not covered: sim01 GPU 0: aggressors 1 of 2/m);
    assert.match(partial.at(-1)!, /^run sc-test: PASSED/, "the verdict stays the last line");
    const j = JSON.parse(lines(ctx(full()), true).join("\n"));
    assert.equal(j.signoff.headline, "COMPLIANT");
    assert.deepEqual([j.signoff.tested, j.signoff.required], [10, 10]);
    assert.equal(j.signoff.gpus[0].verified, 2);
    assert.equal(j.signoff.policy.source, "default");
  });
});
