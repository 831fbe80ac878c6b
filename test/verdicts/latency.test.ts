// victimsLatencyUnaffected on hand-made histories (issue 22 item 3): a victim's p99 that a
// neighbour's OOM raises fails on MIG and is characterised, with its figure, under
// time-slicing; a victim that kept its tail passes; missing or disturbed samples are broken on
// every route, never passed.
import assert from "node:assert/strict";
import type { ChaosEvent, EventData } from "../../src/chaos/history.js";
import { DEFAULT_LATENCY_FAULTS, parseLatencyFaults } from "../../src/chaos/isolation.js";
import type { Route } from "../../src/chaos/routes.js";
import type { ScenarioRef } from "../../src/verdicts/isolation.js";
import { LATENCY_VERDICT, victimsLatencyUnaffected } from "../../src/verdicts/latency.js";
import {
  judgeRoute,
  LATENCY_FAULTS_DEFAULT,
  remeasureScenario,
  verdictNamesOf,
} from "../../src/verdicts/routes.js";

const A = "gpu0/gi1/ci0";
const V = "gpu0/gi2/ci0";
const ref: ScenarioRef = {
  scenario: `n1/${A}/oom`,
  baseline: `n1/${A}/baseline`,
  fault: "oom",
  aggressor: A,
  gpuInstanceId: 1,
  computeInstanceId: 0,
};
const ev = (
  instance: string,
  op: ChaosEvent["op"],
  type: ChaosEvent["type"],
  data: Partial<EventData> & { scenario: string },
): ChaosEvent => ({
  time: "2026-12-03T10:00:00.000Z",
  node: "n1",
  gpu: 0,
  instance,
  process: instance === A ? "aggressor" : "victim",
  op,
  type,
  data,
});
/** A serve window whose interval p99s sit around `p99` ms (±0.5 %). */
const serve = (p99: number, n = 5): Partial<EventData> => ({
  exitCode: 0,
  errors: 0,
  durationS: 1.5,
  p50Ms: 0.1,
  p99Ms: p99,
  rps: 7000,
  latencySamples: [-1, 1, 0, 0.5, -0.5]
    .slice(0, n)
    .map((k, i) => ({ t: (i + 1) * 0.3, p50Ms: 0.1, p99Ms: p99 * (1 + k * 0.005) })),
});

/** An OOM scenario whose victim's p99 was 0.12 ms alone and `under` ms beside the fault. */
function oom(under: number, patch: Partial<EventData> = {}, type: ChaosEvent["type"] = "ok") {
  return [
    ev(V, "serve-baseline", "ok", { scenario: ref.baseline, ...serve(0.12) }),
    // The node's records: the OOM held its memory through the victim's whole window.
    ev(A, "serve-fault", "fail", {
      scenario: ref.scenario,
      exitCode: 2,
      oom: true,
      nodeSpan: { startS: 50, endS: 53 },
    }),
    ev(V, "serve", type, {
      scenario: ref.scenario,
      ...serve(under),
      nodeSpan: { startS: 50.1, endS: 52.9 },
      ...patch,
    }),
  ];
}

const latency = (route: Route, h: ChaosEvent[]) =>
  judgeRoute(route, h, ref).find((v) => v.name === LATENCY_VERDICT)!;

describe("victims' latency unaffected (pure)", () => {
  it("is among the verdicts of the --latency-faults' faults only, on every route", () => {
    assert.ok(verdictNamesOf({ kind: "mig" }, "oom").includes(LATENCY_VERDICT));
    assert.ok(verdictNamesOf({ kind: "time-slicing" }, "crash").includes(LATENCY_VERDICT));
    // A hang waits for its own deadline: struck twice by default would double its cost.
    assert.ok(!verdictNamesOf({ kind: "mig" }, "hang").includes(LATENCY_VERDICT));
    assert.ok(
      verdictNamesOf({ kind: "mig" }, "hang", { latencyFaults: ["hang"] }).includes(
        LATENCY_VERDICT,
      ),
    );
    assert.ok(
      !verdictNamesOf({ kind: "mig" }, "oom", { latencyFaults: [] }).includes(LATENCY_VERDICT),
    );
    // The runner's default and the judge's are one list (verdicts sits below chaos).
    assert.deepEqual([...LATENCY_FAULTS_DEFAULT], [...DEFAULT_LATENCY_FAULTS]);
    assert.deepEqual(parseLatencyFaults(undefined), [...DEFAULT_LATENCY_FAULTS]);
    assert.deepEqual(parseLatencyFaults("none"), []);
    assert.throws(() => parseLatencyFaults("meteor"), /--latency-faults: unknown fault 'meteor'/);
  });

  it("judges no latency for a fault whose victims did not serve through it", () => {
    const names = judgeRoute({ kind: "mig" }, oom(0.121), ref, { latencyFaults: [] }).map(
      (v) => v.name,
    );
    assert.ok(!names.includes(LATENCY_VERDICT), names.join(", "));
  });

  it("passes a victim that kept its p99 beside a neighbour's OOM", () => {
    const v = victimsLatencyUnaffected(oom(0.121), ref);
    assert.equal(v.status, "passed", v.summary);
    assert.equal(v.evidence.figures[`${V} baseline p99 ms`], 0.12);
    assert.match(v.summary, /1 victim\(s\) kept their latency/);
  });

  it("a planted p99 regression under a neighbour's OOM fails on MIG and is characterised under time-slicing", () => {
    const h = oom(0.48);
    const mig = latency({ kind: "mig" }, h);
    assert.equal(mig.status, "failed");
    assert.match(mig.summary, /p99 rose to 0\.480 ms from 0\.120 ms alone \(×4\.00/);
    assert.equal(mig.kind, undefined);
    const soft = latency({ kind: "time-slicing" }, h);
    assert.equal(soft.status, "passed");
    assert.equal(soft.kind, "characterised");
    assert.match(soft.summary, /^time-slicing: a faulting neighbour raises the victim's p99 ×4\.0/);
    assert.equal(soft.evidence.figures.expectedWeakness, true);
    assert.equal(soft.evidence.figures[`${V} p99 rise`], 4);
  });

  it("a rise within the floor (timer jitter) is no failure, one just past it is", () => {
    assert.equal(victimsLatencyUnaffected(oom(0.16), ref).status, "passed");
    assert.equal(victimsLatencyUnaffected(oom(0.18), ref).status, "failed");
  });

  it("wrong answers and a serve that died fail; on a soft route they are characterised as the fault reaching the victim", () => {
    const wrong = victimsLatencyUnaffected(oom(0.12, { errors: 3 }), ref);
    assert.equal(wrong.status, "failed");
    assert.match(wrong.summary, /answered 3 request\(s\) wrong/);
    const died = oom(0.12, { exitCode: 2, latencySamples: [] }, "fail");
    assert.equal(latency({ kind: "mig" }, died).status, "failed");
    const soft = latency({ kind: "time-slicing" }, died);
    assert.equal(soft.kind, "characterised");
    assert.match(soft.summary, /the aggressor's fault reached the victim's requests/);
  });

  it("missing or disturbed samples are broken on every route, never passed", () => {
    const few = oom(0.12, { latencySamples: serve(0.12, 2).latencySamples });
    for (const route of [{ kind: "mig" }, { kind: "time-slicing" }] as Route[]) {
      const v = latency(route, few);
      assert.equal(v.status, "broken", route.kind);
      assert.match(v.summary, /printed 2 latency sample\(s\)/);
    }
    const cut = victimsLatencyUnaffected(oom(0.5, { incomplete: "stopped by SIGTERM" }), ref);
    assert.equal(cut.status, "broken");
    const noBaseline = victimsLatencyUnaffected(oom(0.5).slice(1), ref);
    assert.equal(noBaseline.status, "broken");
    assert.match(noBaseline.summary, /no baseline latency/);
    const none = victimsLatencyUnaffected(oom(0.5).slice(0, 2), ref);
    assert.equal(none.status, "broken");
    // Killed at its deadline with its samples short of the end: a serve that stopped answering
    // fails, one whose node was starved of CPU (its recorder's PSI figure) is undecided.
    const short = serve(0.12).latencySamples!.slice(0, 3);
    const hung = oom(0.12, { timedOut: true, latencySamples: short }, "fail");
    assert.equal(victimsLatencyUnaffected(hung, ref).status, "failed");
    const starved = "the node's CPU was stalled for 9.0 s of its 9.5 s (PSI cpu some)";
    const slow = oom(0.12, { timedOut: true, latencySamples: short, starved }, "fail");
    const v = victimsLatencyUnaffected(slow, ref);
    assert.equal(v.status, "broken", v.summary);
    assert.match(v.summary, /killed at its deadline: the node's CPU was stalled/);
    // The victim's window ended before the OOM held its memory: it says nothing of the fault,
    // and the scenario is measured once more (its serve windows again), then not again.
    const missed = oom(0.12, { nodeSpan: { startS: 40, endS: 42 } });
    assert.equal(victimsLatencyUnaffected(missed, ref).status, "broken");
    const o = { latencyFaults: ["oom"] };
    assert.match(remeasureScenario(missed, ref, o) ?? "", /did not land while the victims ran/);
    assert.equal(remeasureScenario(missed, ref, { latencyFaults: [] }), null);
    const again = [
      ...missed,
      ev(V, "serve", "ok", { scenario: ref.scenario, attempt: 2, ...serve(0.12) }),
    ];
    assert.equal(remeasureScenario(again, ref, o), null);
    assert.equal(remeasureScenario(oom(0.12), ref, o), null);
  });
});
