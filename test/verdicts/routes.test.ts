// The route-aware verdicts on hand-made histories: a soft route's slowdown is a
// characterisation (passed, with its figure) where MIG fails it; a disturbed measurement stays
// broken on every route; MPS with a memory limit fails a breached cap and a victim that lost its
// memory; the slowdown per tenant count is read against one tenant alone and is broken when a
// tenant's window was cut short.
import assert from "node:assert/strict";
import type { ChaosEvent, EventData } from "../../src/chaos/history.js";
import type { Route } from "../../src/chaos/routes.js";
import type { ScenarioRef } from "../../src/verdicts/isolation.js";
import { judgeRoute, memoryIsolated, slowdownPerTenants } from "../../src/verdicts/routes.js";

const A = "gpu0/ts-a";
const V = "gpu0/ts-b";
const ref = (fault: ScenarioRef["fault"]): ScenarioRef => ({
  scenario: `n1/${A}/${fault}`,
  baseline: `n1/${A}/baseline`,
  fault,
  aggressor: A,
  gpuInstanceId: null,
  computeInstanceId: null,
});
const ev = (
  instance: string,
  op: ChaosEvent["op"],
  type: ChaosEvent["type"],
  data: Partial<EventData> & { scenario: string },
  time = "2026-11-29T10:00:00.000Z",
): ChaosEvent => ({
  time,
  node: "n1",
  gpu: 0,
  instance,
  process: instance === A ? "aggressor" : "victim",
  op,
  type,
  data,
});
const samples = (v: number) =>
  [-1, 1, 0, 0.5, -0.5].map((k, i) => ({ t: (i + 1) * 0.3, tflops: v * (1 + k * 0.002) }));
const stress = (v: number) => ({ exitCode: 0, tflops: v, samples: samples(v), durationS: 1.5 });

/** A noisy-neighbour scenario whose victim ran at `under` of its baseline of 10 TFLOP/s. */
function noisy(under: number, patch: Partial<EventData> = {}): ChaosEvent[] {
  const r = ref("noisy");
  return [
    ev(V, "baseline", "ok", { scenario: r.baseline, ...stress(10) }),
    // The node's records: the noisy aggressor and the victim ran side by side.
    ev(A, "fault", "ok", {
      scenario: r.scenario,
      ...stress(5),
      nodeSpan: { startS: 50, endS: 53 },
    }),
    ev(V, "load", "ok", {
      scenario: r.scenario,
      ...stress(10 * under),
      nodeSpan: { startS: 50.1, endS: 53.1 },
      ...patch,
    }),
    ev("gpu0", "dmesg", "ok", { scenario: r.scenario, xids: [] }),
    ev(A, "recovery", "ok", { scenario: r.scenario, ...stress(10) }),
  ];
}

const TS: Route = { kind: "time-slicing" };
const MPS_CAPPED: Route = { kind: "mps", memLimitMiB: 1024, threadPct: 50 };

describe("route-aware verdicts (pure)", () => {
  it("a time-sliced victim at half speed is characterised; the same history fails under MIG", () => {
    const h = noisy(0.5);
    const soft = judgeRoute(TS, h, ref("noisy")).find((v) => v.name === "victimsUnaffected")!;
    assert.equal(soft.status, "passed");
    assert.equal(soft.kind, "characterised");
    assert.match(soft.summary, /^time-slicing: a noisy neighbour slows the victim ×2\.0; expected/);
    assert.equal(soft.evidence.figures.expectedWeakness, true);
    const mig = judgeRoute({ kind: "mig" }, h, ref("noisy")).find(
      (v) => v.name === "victimsUnaffected",
    )!;
    assert.equal(mig.status, "failed");
  });

  it("a disturbed measurement stays broken on a soft route", () => {
    const h = noisy(0.5, { incomplete: "stopped by SIGTERM after 0.4 s" });
    const v = judgeRoute(TS, h, ref("noisy")).find((x) => x.name === "victimsUnaffected")!;
    assert.equal(v.status, "broken");
    assert.equal(v.kind, undefined);
  });

  it("MPS with a memory limit fails a tenant past its cap and a victim that lost its memory", () => {
    const r = ref("oom");
    const base = [
      ev(A, "fault", "ok", {
        scenario: r.scenario,
        exitCode: 0,
        oom: true,
        allocatedBytes: 768 * 2 ** 20,
      }),
      ev(V, "memcheck", "ok", { scenario: r.scenario, exitCode: 0, checks: [true] }),
    ];
    assert.equal(memoryIsolated(base, r, 1024).status, "passed");
    const past = [
      { ...base[0]!, data: { ...base[0]!.data, allocatedBytes: 4096 * 2 ** 20 } },
      base[1]!,
    ];
    const v = memoryIsolated(past, r, 1024);
    assert.equal(v.status, "failed");
    assert.match(v.summary, /allocated 4096 MiB past its 1024 MiB pinned memory limit/);
    const lostMem = [
      base[0]!,
      ev(V, "memcheck", "fail", { scenario: r.scenario, exitCode: 1, checks: [false] }),
    ];
    assert.equal(memoryIsolated(lostMem, r, 1024).status, "failed");
    assert.equal(
      memoryIsolated([base[0]!], r, 1024).status,
      "broken",
      "no memory check: undecided",
    );
    assert.ok(
      judgeRoute(MPS_CAPPED, past, r).some(
        (x) => x.name === "memoryIsolated" && x.status === "failed",
      ),
    );
    assert.ok(
      !judgeRoute(TS, past, r).some((x) => x.name === "memoryIsolated"),
      "no memory promise, no check",
    );
  });

  it("a vGPU guest's memory promise is its framebuffer: the aggressor past it fails, named", () => {
    const r = ref("oom");
    const guest: Route = { kind: "time-slicing", vgpuFramebufferMiB: 20480 };
    const oom = (mib: number, victimOk: boolean) => [
      ev(A, "fault", "ok", {
        scenario: r.scenario,
        exitCode: 0,
        oom: true,
        allocatedBytes: mib * 2 ** 20,
      }),
      ev(V, "memcheck", victimOk ? "ok" : "fail", {
        scenario: r.scenario,
        exitCode: victimOk ? 0 : 1,
        checks: [victimOk],
      }),
    ];
    const mem = (route: Route, h: ChaosEvent[]) =>
      judgeRoute(route, h, r).find((x) => x.name === "memoryIsolated");
    // Held at the framebuffer: passed, the framebuffer named. The victim in the same guest
    // shares that framebuffer, so its failed check is not the vGPU's promise (characterised
    // by victimsUnaffected instead): no false failure.
    const held = mem(guest, oom(20000, false))!;
    assert.equal(held.status, "passed", held.summary);
    assert.match(held.summary, /stopped at 20000 MiB of its 20480 MiB vGPU framebuffer/);
    assert.equal(held.evidence.figures.cap, "vGPU framebuffer");
    // Past it (a leak into the card's memory): failed, whatever the victims saw.
    const leak = mem(guest, oom(79000, true))!;
    assert.equal(leak.status, "failed");
    assert.match(leak.summary, /allocated 79000 MiB past its 20480 MiB vGPU framebuffer/);
    // One MiB past is past: the cap is inclusive, not a tolerance.
    assert.equal(mem(guest, oom(20481, true))!.status, "failed");
    assert.equal(mem(guest, oom(20480, true))!.status, "passed");
    // The framebuffer unread: undecided, never passed.
    const unknown = mem({ kind: "mps", memLimitMiB: null, vgpuFramebufferMiB: null }, oom(1, true));
    assert.equal(unknown?.status, "broken");
    // MPS with a limit inside the guest: the tighter cap (the limit) holds, victims included.
    const capped: Route = { ...MPS_CAPPED, vgpuFramebufferMiB: 20480 };
    const c = mem(capped, oom(768, false))!;
    assert.equal(c.status, "failed", "the limit promises the victims theirs");
    assert.match(c.summary, /could not allocate/);
    assert.match(
      mem(capped, oom(768, true))!.summary,
      /1024 MiB pinned memory limit \(inside the 20480 MiB vGPU framebuffer\)/,
    );
    // Outside a guest nothing changes: time-slicing still promises no memory.
    assert.equal(mem(TS, oom(79000, true)), undefined);
  });

  it("a vGPU guest's noisy neighbour is a characterisation naming the scheduler's expectation", () => {
    const guest: Route = { kind: "time-slicing", vgpuFramebufferMiB: 20480 };
    const v = judgeRoute(guest, noisy(0.5), ref("noisy")).find(
      (x) => x.name === "victimsUnaffected",
    )!;
    assert.equal(v.status, "passed");
    assert.equal(v.kind, "characterised");
    assert.match(
      v.summary,
      /^time-slicing in a vGPU guest \(framebuffer 20480 MiB\): a noisy neighbour slows the victim ×2\.0/,
    );
    assert.match(
      v.summary,
      /promises memory isolation \(the vGPU guest's own framebuffer: 20480 MiB\)/,
    );
    assert.match(v.summary, /compute shared or throttled by the host's vGPU scheduler/);
  });

  it("the slowdown per tenant count against one alone, broken when a tenant was cut short", () => {
    const r = { ...ref("tenants"), scenario: `n1/${A}/tenants` };
    const h = [
      ev(V, "baseline", "ok", { scenario: r.baseline, ...stress(12) }),
      ...[1, 2].map((k) =>
        ev(`${A}-t${k}`, "tenants", "ok", {
          scenario: r.scenario,
          tenants: 2,
          nodeSpan: { startS: 100 + k * 0.05, endS: 110 + k * 0.05 },
          ...stress(6),
        }),
      ),
      ...[1, 2, 3].map((k) =>
        ev(`${A}-t${k}`, "tenants", "ok", {
          scenario: r.scenario,
          tenants: 3,
          nodeSpan: { startS: 200, endS: 210 },
          ...stress(4),
        }),
      ),
    ];
    const v = slowdownPerTenants(h, r, TS);
    assert.equal(v.status, "passed");
    assert.equal(v.kind, "characterised");
    assert.equal(v.evidence.figures["tenants 2 slowdown"], 2);
    assert.equal(v.evidence.figures["tenants 3 slowdown"], 3);
    const cut = h.map((e, i) =>
      i === 4 ? { ...e, data: { ...e.data, incomplete: "stopped early" } } : e,
    );
    assert.equal(slowdownPerTenants(cut, r, TS).status, "broken");
    // Two tenants that ran one after the other on the node (a skewed launch): their slowdown
    // is not two tenants' (×1), so no figure, broken.
    const apart = h.map((e, i) =>
      i === 2 ? { ...e, data: { ...e.data, nodeSpan: { startS: 109, endS: 119 } } } : e,
    );
    const b = slowdownPerTenants(apart, r, TS);
    assert.equal(b.status, "broken");
    assert.match(
      b.summary,
      /2 tenants did not share the GPU: they ran together 1\.0 s of the shortest tenant's 10\.0 s \(starts 9\.0 s apart\)/,
    );
    assert.equal(b.evidence.figures["tenants 2 slowdown"], undefined);
    const unknown = h.map((e, i) =>
      i === 5 ? { ...e, data: { ...e.data, nodeSpan: undefined } } : e,
    );
    assert.match(
      slowdownPerTenants(unknown, r, TS).summary,
      /3 tenants did not share the GPU: the node's record/,
    );
  });
});
