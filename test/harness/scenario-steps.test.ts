// An isolation check's steps as Allure shows them: each step's own outcome from the scenario's
// history (a victim that died fails "victims under load"; a lost outcome is broken; the
// aggressor's fault, meant to fail, does not), and the step the check's verdict judges takes
// the verdict's status, so a failed check always shows its failing step. Pure, over hand-made
// histories.
import assert from "node:assert/strict";
import { type ChaosEvent, History } from "../../src/chaos/history.js";
import type { VerdictView } from "../../src/harness/api-types.js";
import { stepsOf } from "../../src/harness/services.js";
import type { ScenarioRef } from "../../src/verdicts/isolation.js";
import { stepsAsJudged } from "../../suites/lib/judge.js";

const ref: ScenarioRef = {
  scenario: "sim01/gpu0/gi1/ci0/crash",
  baseline: "sim01/gpu0/gi1/ci0/baseline",
  fault: "crash",
  aggressor: "gpu0/gi1/ci0",
  gpuInstanceId: 1,
  computeInstanceId: 0,
};

function history(load: ChaosEvent["type"], extra: Partial<ChaosEvent["data"]> = {}): History {
  const h = new History(null);
  let t = Date.parse("2026-12-01T00:00:00Z");
  const ev = (
    op: ChaosEvent["op"],
    type: ChaosEvent["type"],
    scenario: string,
    process: ChaosEvent["process"],
    data: Partial<ChaosEvent["data"]> = {},
  ) => {
    t += 1000;
    h.add({
      time: new Date(t).toISOString(),
      node: "sim01",
      gpu: 0,
      instance: process === "aggressor" ? "gpu0/gi1/ci0" : "gpu0/gi2/ci0",
      process,
      op,
      type,
      data: { scenario, ...data },
    });
  };
  ev("baseline", "invoke", ref.baseline, "victim");
  ev("baseline", "ok", ref.baseline, "victim", { tflops: 30 });
  ev("fault", "invoke", ref.scenario, "aggressor");
  ev("load", "invoke", ref.scenario, "victim");
  // The aggressor's crash is what the scenario asked for: its `fail` is no failed step.
  ev("fault", "fail", ref.scenario, "aggressor", { exitCode: 2 });
  ev("load", load, ref.scenario, "victim", { tflops: 30, ...extra });
  ev("dmesg", "info", ref.scenario, "controller");
  ev("recovery", "invoke", ref.scenario, "aggressor");
  ev("recovery", "ok", ref.scenario, "aggressor", { tflops: 30 });
  return h;
}

const view = (title: string, status: VerdictView["status"]): VerdictView => ({
  title,
  gpu: 0,
  status,
  kind: status === "passed" ? "measured" : null,
  code: status === "passed" ? "OK" : "ISOLATION_VIOLATION",
  message: "",
  figures: {},
  evidence: [],
});

const statuses = (s: { name: string; status: string }[]) =>
  Object.fromEntries(s.map((x) => [x.name, x.status]));

describe("isolation steps: their own outcome, and the verdict that judges them", () => {
  it("a victim that died under load fails that step, in every check of the scenario", () => {
    const steps = stepsOf(history("fail", { exitCode: 2 }), ref);
    assert.deepEqual(statuses(steps), {
      "baseline (victims alone)": "passed",
      "fault injected in the aggressor": "passed",
      "victims under load": "failed",
      "kernel log read": "passed",
      "aggressor recovery": "passed",
    });
    // faultContained passed, yet its check shows the victims' failed step.
    const s = statuses(stepsAsJudged(steps, view("faultContained", "passed")));
    assert.equal(s["victims under load"], "failed");
  });

  it("a victim slowed (its workload ended well): the failed victimsUnaffected fails its step", () => {
    const steps = stepsOf(history("ok"), ref);
    assert.ok(
      steps.every((x) => x.status === "passed"),
      "every workload ended well",
    );
    const judged = statuses(stepsAsJudged(steps, view("victimsUnaffected", "failed")));
    assert.equal(judged["victims under load"], "failed");
    assert.equal(judged["fault injected in the aggressor"], "passed");
    // Each verdict fails only the step it judges.
    const xid = statuses(stepsAsJudged(steps, view("xidAttributed", "failed")));
    assert.equal(xid["kernel log read"], "failed");
    assert.equal(xid["victims under load"], "passed");
    // A verdict that passed leaves every step as it was.
    const ok = stepsAsJudged(steps, view("victimsUnaffected", "passed"));
    assert.ok(ok.every((x) => x.status === "passed"));
  });

  it("a victim re-measured (slowed once, then fine): the step shows the attempt judged", () => {
    const h = history("fail", { timedOut: true, exitCode: 137 });
    const t = Date.parse(h.events.at(-1)!.time);
    for (const [k, type] of [
      [1, "invoke"],
      [2, "ok"],
    ] as const)
      h.add({
        time: new Date(t + k * 1000).toISOString(),
        node: "sim01",
        gpu: 0,
        instance: "gpu0/gi2/ci0",
        process: "victim",
        op: "load",
        type,
        data: { scenario: ref.scenario, attempt: 2, tflops: 30 },
      });
    const steps = stepsOf(h, ref);
    assert.equal(statuses(steps)["victims under load"], "passed");
    // Its span covers both attempts.
    const load = steps.find((x) => x.name === "victims under load")!;
    assert.equal(load.stopMs, t + 2000);
  });

  it("a victim stopped before its end (incomplete) is a broken step, not a failed one", () => {
    const steps = stepsOf(history("fail", { incomplete: "stopped by SIGINT" }), ref);
    assert.equal(statuses(steps)["victims under load"], "broken");
    // …and a broken verdict of that step keeps it broken, never worse.
    const s = statuses(stepsAsJudged(steps, view("victimsUnaffected", "broken")));
    assert.equal(s["victims under load"], "broken");
  });
});
