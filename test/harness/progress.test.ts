// The progress model's arithmetic (time left per node and overall, from planned steps and a
// clock reading) and the plain view's promise: a line per node per phase, never per event.
import assert from "node:assert/strict";
import { progressView } from "../../src/cli/progress-view.js";
import {
  formatEta,
  isolationSeconds,
  type PlannedStep,
  type ProgressEvent,
  ProgressModel,
  planOf,
  progressLine,
  RunProgress,
  slotsS,
} from "../../src/harness/progress.js";

const step = (key: string, expectedS: number, units = 0): PlannedStep => ({
  key,
  label: key,
  expectedS,
  units,
});

describe("progress model (ETA from planned steps)", () => {
  const plan = [step("connect", 2), step("stress", 30, 7), step("restore", 5)];
  const T0 = 1_000_000;

  it("before the first phase, the whole plan is left; in a step, what it still expects plus the later steps", () => {
    const m = new ProgressModel();
    m.apply({ kind: "plan", node: "sim01", steps: plan });
    assert.equal(m.remainingS("sim01", T0), 37);
    m.apply({ kind: "phase", node: "sim01", key: "connect", atMs: T0 });
    m.apply({ kind: "phase", node: "sim01", key: "stress", atMs: T0 + 1000 });
    // 12 s into a 30 s step: 18 s of it left, then 5 s of restore.
    assert.equal(m.remainingS("sim01", T0 + 13_000), 23);
  });

  it("a step that overran its estimate counts as nothing left, never negative", () => {
    const m = new ProgressModel();
    m.apply({ kind: "plan", node: "sim01", steps: plan });
    m.apply({ kind: "phase", node: "sim01", key: "stress", atMs: T0 });
    assert.equal(m.remainingS("sim01", T0 + 100_000), 5);
  });

  it("a step whose tests are all done is over, however early; the count shows on the line", () => {
    const m = new ProgressModel();
    m.apply({ kind: "plan", node: "sim01", steps: plan });
    m.apply({ kind: "phase", node: "sim01", key: "stress", detail: "1g.10gb", atMs: T0 });
    for (let i = 0; i < 3; i++) m.apply({ kind: "unit", node: "sim01", key: "stress" });
    const p = m.node("sim01", T0 + 18_000);
    assert.equal(p.etaS, 12 + 5);
    assert.equal(progressLine(p), "sim01  stress 1g.10gb (3/7)  ETA 0:17");
    for (let i = 0; i < 4; i++) m.apply({ kind: "unit", node: "sim01", key: "stress" });
    assert.equal(m.remainingS("sim01", T0 + 18_000), 5);
  });

  it("a new plan (the suites' declared durations) replaces the guess and keeps the current step", () => {
    const m = new ProgressModel();
    m.apply({ kind: "plan", node: "sim01", steps: plan });
    m.apply({ kind: "phase", node: "sim01", key: "connect", atMs: T0 });
    m.apply({
      kind: "plan",
      node: "sim01",
      steps: [step("connect", 2), step("stress", 60, 7), step("restore", 5)],
    });
    assert.equal(m.remainingS("sim01", T0 + 1000), 1 + 60 + 5);
  });

  it("overall: the nodes run side by side, so the slowest one; an ended node has none left", () => {
    const m = new ProgressModel();
    for (const n of ["sim01", "sim02"]) m.apply({ kind: "plan", node: n, steps: plan });
    m.apply({ kind: "phase", node: "sim01", key: "restore", atMs: T0 });
    m.apply({ kind: "phase", node: "sim02", key: "stress", atMs: T0 });
    assert.equal(m.overallS(T0 + 10_000), 20 + 5);
    m.apply({ kind: "end", node: "sim02", atMs: T0 + 10_000, error: "[CONNECT] refused" });
    assert.equal(m.overallS(T0 + 10_000), 0);
    assert.equal(progressLine(m.node("sim02", T0)), "sim02  not checked [CONNECT] refused");
  });

  it("overall with --concurrency below the nodes: the nodes waiting for a slot come after, not beside", () => {
    const m = new ProgressModel();
    const nodes = ["sim01", "sim02", "sim03", "sim04"];
    for (const n of nodes) m.apply({ kind: "plan", node: n, steps: plan });
    // Without a bound: 4 nodes side by side end with one (2 + 30 + 5 s).
    assert.equal(m.overallS(T0), 37);
    for (const n of nodes) m.apply({ kind: "plan", node: n, steps: plan, concurrency: 2 });
    // Two at a time: two waves.
    assert.equal(m.overallS(T0), 2 * 37);
    for (const n of nodes) m.apply({ kind: "plan", node: n, steps: plan, concurrency: 1 });
    assert.equal(m.overallS(T0), 4 * 37);
    // An ended node frees its slot.
    m.apply({ kind: "end", node: "sim04", atMs: T0 });
    assert.equal(m.overallS(T0), 3 * 37);
  });

  it("slotsS: each job to the least busy slot, the longest first; more slots than jobs is the longest", () => {
    assert.equal(slotsS([10, 10, 10, 10], 64), 10);
    assert.equal(slotsS([10, 10, 10, 10], 2), 20);
    assert.equal(slotsS([30, 10, 10, 10], 2), 30);
    assert.equal(slotsS([5, 0, 0], 1), 5);
    assert.equal(slotsS([], 3), 0);
  });

  it("RunProgress tells the model the run's --concurrency with each node's plan", () => {
    const events: ProgressEvent[] = [];
    const p = new RunProgress((e) => events.push(e), {
      layout: false,
      restore: false,
      concurrency: 3,
    });
    p.plan("sim01", [step("isolation", 30, 4)]);
    const e = events[0];
    assert.ok(e?.kind === "plan");
    assert.equal(e.concurrency, 3);
  });

  it("phases of steps not in the plan (the harness's own pre-checks) change nothing", () => {
    const m = new ProgressModel();
    m.apply({ kind: "plan", node: "sim01", steps: plan });
    m.apply({ kind: "phase", node: "sim01", key: "connect", atMs: T0 });
    const a = m.apply({ kind: "phase", node: "sim01", key: "run", atMs: T0 + 500 });
    assert.equal(a.announce, false);
    assert.equal(m.node("sim01", T0).label, "connect");
  });

  it("planOf puts the layout and restore around the suites only when the run changes the layout", () => {
    const keys = (o: { layout: boolean; restore: boolean }) =>
      planOf({ ...o, suites: [step("stress", 3)] }).map((s) => s.key);
    assert.deepEqual(keys({ layout: true, restore: true }), [
      "connect",
      "discover",
      "layout",
      "stress",
      "restore",
    ]);
    assert.deepEqual(keys({ layout: false, restore: false }), ["connect", "discover", "stress"]);
  });

  it("formats the time left as m:ss or h:mm:ss, rounded up", () => {
    assert.equal(formatEta(0), "0:00");
    assert.equal(formatEta(0.2), "0:01");
    assert.equal(formatEta(42), "0:42");
    assert.equal(formatEta(725), "12:05");
    assert.equal(formatEta(3723), "1:02:03");
    assert.equal(formatEta(-5), "0:00");
  });
});

describe("run progress events (what the harness sends)", () => {
  it("starts each node on a guessed plan: a suite that declared workloads one duration, health none, a user's suite none", () => {
    const events: ProgressEvent[] = [];
    const p = new RunProgress(
      (e) => events.push(e),
      { layout: true, restore: false },
      () => 7,
    );
    p.start(
      ["sim01", "sim02"],
      [
        { name: "stress", needs: { runsWorkloads: true } },
        { name: "health", needs: { readsKernelLog: true } },
        { name: "site.mjs", needs: {} },
      ],
      30,
    );
    const m = new ProgressModel();
    for (const e of events) m.apply(e);
    // connect 2 (entered at 7 ms: nothing spent) + discover 2 + layout 5 + stress 31 + health 1
    // + site 1; no restore step (--keep).
    assert.equal(m.remainingS("sim02", 7), 2 + 2 + 5 + 31 + 1 + 1);
    assert.equal(m.node("sim01", 7).label, "connect");
    p.unit({ node: null, suite: "run" });
    assert.equal(events.length, 4, "a check of no node counts for no node");
  });
});

describe("isolation's declared seconds", () => {
  it("a baseline per aggressor, a duration and setup per fault, the memory window for OOM only", () => {
    const sc = (label: string, fault: string, mode = "mig") => ({
      gpu: 0,
      mode,
      fault,
      aggressor: { label },
    });
    const two = [sc("a", "oom"), sc("a", "kill"), sc("b", "oom"), sc("b", "kill")];
    // 2 baselines × 10 + 4 faults × (10 + 2) + 2 OOM memory windows × 6
    assert.equal(isolationSeconds(two, 10), 20 + 48 + 12);
    assert.equal(isolationSeconds([sc("w", "exclusive", "exclusive")], 10), 11);
  });
});

describe("plain progress (no terminal): a line per node per phase", () => {
  it("prints a node's line when it enters a step, not for tests, details or repeats within it", async () => {
    const lines: string[] = [];
    let t = 0;
    const v = await progressView("plain", { out: () => {}, err: (l) => lines.push(l) }, () => t);
    const plan = [step("connect", 2), step("stress", 3, 7)];
    v.event({ kind: "plan", node: "sim01", steps: plan });
    v.event({ kind: "phase", node: "sim01", key: "connect", atMs: t });
    t = 500;
    v.event({ kind: "phase", node: "sim01", key: "stress", detail: "running", atMs: t });
    for (let i = 0; i < 7; i++) {
      t += 100;
      v.event({ kind: "phase", node: "sim01", key: "stress", detail: "1g.10gb", atMs: t });
      v.event({ kind: "unit", node: "sim01", key: "stress" });
    }
    // An announced part (an isolation scenario's fault) is a phase of its own.
    v.event({
      kind: "phase",
      node: "sim01",
      key: "stress",
      detail: "oom",
      announce: true,
      atMs: t,
    });
    v.event({
      kind: "phase",
      node: "sim01",
      key: "stress",
      detail: "oom",
      announce: true,
      atMs: t,
    });
    v.event({ kind: "end", node: "sim01", atMs: t });
    v.event({ kind: "end", node: "sim01", atMs: t });
    assert.deepEqual(lines, [
      "[   0.0s] sim01  connect  ETA 0:05",
      "[   0.5s] sim01  stress running (0/7)  ETA 0:03",
      "[   1.2s] sim01  stress oom (7/7)  ETA 0:00",
      "[   1.2s] sim01  done",
    ]);
  });
});
