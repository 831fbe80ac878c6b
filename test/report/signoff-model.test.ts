// The sign-off model on hand-made check records: the headline's three answers, the route, the
// tenants and how many were verified isolated, and each requirement's result.
import assert from "node:assert/strict";
import type { ContextInstance, RunContext } from "../../src/report/context.js";
import { scenariosOf } from "../../src/report/signoff/isolation.js";
import { signoffModel } from "../../src/report/signoff/model.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";

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

function ctx(checks: CheckRecord[], instances: ContextInstance[] = [A, B]): RunContext {
  return {
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

function isolation(aggressor: ContextInstance, victim: ContextInstance, ok = true): CheckRecord[] {
  const params = (verdict: string) => ({
    mode: "mig",
    fault: "oom",
    aggressor: aggressor.label,
    profile: aggressor.profile,
    verdict,
  });
  return ["victimsUnaffected", "faultContained", "xidAttributed", "recovered"].map((v) =>
    check({
      suite: "isolation",
      title: `oom: ${v}`,
      status: v === "victimsUnaffected" && !ok ? "failed" : "passed",
      parameters: params(v),
      figures:
        v === "victimsUnaffected"
          ? {
              tolerance: 0.05,
              [`${victim.label} baseline TFLOP/s`]: 30,
              [`${victim.label} under fault TFLOP/s`]: ok ? 30 : 15,
            }
          : {},
    }),
  );
}

describe("sign-off model", () => {
  it("stress only on a MIG GPU: NOT ASSESSED, naming the GPU isolation was not assessed on", () => {
    const m = signoffModel(ctx([stress(A), stress(B)]));
    assert.equal(m.headline, "NOT ASSESSED");
    assert.deepEqual(m.reasons, ["isolation not assessed on sim01 GPU 0"]);
    const iso = m.requirements.find((r) => r.key === "isolation")!;
    assert.equal(iso.result, "NOT ASSESSED");
    assert.equal(m.requirements.find((r) => r.key === "stress")!.result, "PASS");
    assert.equal(m.requirements.find((r) => r.key === "layout")!.result, "NOT ASSESSED");
    assert.equal(m.gpus[0]!.route, "MIG");
    assert.equal(m.gpus[0]!.tenants, 2);
    assert.equal(m.gpus[0]!.verified, 0);
  });

  it("isolation assessed and passed on every partitioned GPU: COMPLIANT, both tenants verified", () => {
    const m = signoffModel(ctx([stress(A), stress(B), ...isolation(A, B)]));
    assert.equal(m.headline, "COMPLIANT", m.reasons.join("; "));
    assert.equal(m.gpus[0]!.verified, 2);
    assert.equal(m.requirements.find((r) => r.key === "isolation:oom")!.result, "PASS");
  });

  it("a failed check: NOT COMPLIANT, with where it failed; the victim is not verified isolated", () => {
    const m = signoffModel(ctx([stress(A), stress(B, "failed"), ...isolation(A, B, false)]));
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

  it("a broken check keeps it from COMPLIANT (NOT ASSESSED), and so does an unreachable node", () => {
    const broken = check({ suite: "health", title: "driver answers", status: "broken", code: "X" });
    const m = signoffModel(ctx([...isolation(A, B), broken]));
    assert.equal(m.headline, "NOT ASSESSED");
    assert.match(m.reasons.join(";"), /1 check\(s\) broken.*sim01 GPU 0/);
    assert.equal(m.requirements.find((r) => r.key === "health")!.result, "BROKEN");
    const c = ctx(isolation(A, B));
    c.nodes.push({ node: "sim03", driver: null, cuda: null, gpus: [], error: "[CONNECT] refused" });
    assert.deepEqual(signoffModel(c).reasons, ["sim03 could not be checked"]);
  });

  it("whole GPUs only: route says no partitioning, and the page does not call it compliant", () => {
    const w: ContextInstance = { ...A, profile: "whole-gpu", placement: null, mig: false };
    const m = signoffModel(ctx([stress(w)], [w]));
    assert.equal(m.gpus[0]!.route, "whole GPU (no partitioning)");
    assert.equal(m.headline, "NOT ASSESSED");
    assert.deepEqual(m.reasons, ["no MIG-partitioned GPU was checked"]);
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
});
