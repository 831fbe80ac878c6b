// The isolation verdicts on hand-made histories: each one passes on a clean scenario and fails
// (or is broken) on the history of the fault it exists to catch.
import assert from "node:assert/strict";
import type { ChaosEvent, EventData, FaultName } from "../../src/chaos/history.js";
import {
  baselineProblem,
  exclusivity,
  faultContained,
  judgeScenario,
  recovered,
  remeasureReason,
  type ScenarioRef,
  victimsUnaffected,
  xidAttributed,
} from "../../src/verdicts/isolation.js";

const A = "gpu0/gi1/ci0";
const V = "gpu0/gi2/ci0";

function ref(fault: FaultName): ScenarioRef {
  return {
    scenario: `n1/${A}/${fault}`,
    baseline: `n1/${A}/baseline`,
    fault,
    aggressor: A,
    gpuInstanceId: 1,
    computeInstanceId: 0,
  };
}

function ev(
  instance: string,
  op: ChaosEvent["op"],
  type: ChaosEvent["type"],
  data: Partial<EventData> & { scenario: string },
): ChaosEvent {
  return {
    time: "2026-11-29T10:00:00.000Z",
    node: "n1",
    gpu: 0,
    instance,
    process: instance === A ? "aggressor" : op === "dmesg" ? "controller" : "victim",
    op,
    type,
    data,
  };
}

const XID_A = {
  xid: 31,
  pci: "0000:07:00",
  gpuInstanceId: 1,
  computeInstanceId: 0,
  pid: 4242,
  name: "slicecheck-cras",
  line: "NVRM: Xid (PCI:0000:07:00 GPU-I:01 GPU-CI:00): 31, pid=4242, name=slicecheck-cras, Ch 00000008",
};

/** Five interval samples around `v` (±0.2 %), as a stress's lines give them. */
function samples(v: number, spread = 0.002): { t: number; tflops: number }[] {
  return [-1, 1, 0, 0.5, -0.5].map((k, i) => ({ t: (i + 1) * 0.3, tflops: v * (1 + k * spread) }));
}

/** A clean history of `fault`, with `patch` applied to the completion events it names. */
function history(
  fault: FaultName,
  patch: Partial<Record<ChaosEvent["op"], Partial<EventData> & { type?: ChaosEvent["type"] }>> = {},
): ChaosEvent[] {
  const r = ref(fault);
  const s = r.scenario;
  // The node's records (its clock, seconds): the victims' 3 s of stress from 100.02 s and the
  // aggressor started with them; a crash strikes 0.9 s in, a hang lasts half the duration.
  const span = (startS: number, endS: number) => ({ nodeSpan: { startS, endS } });
  const aggressorEnd: Record<FaultName, [ChaosEvent["type"], Partial<EventData>]> = {
    oom: ["ok", { exitCode: 0, oom: true, ...span(100, 108) }],
    crash: [
      "fail",
      {
        exitCode: 2,
        cudaErrors: [
          {
            kind: "illegal-address",
            message: "CUDA error: an illegal memory access was encountered",
          },
        ],
        ...span(100, 100.9),
      },
    ],
    kill: ["fail", { exitCode: null, signal: "SIGKILL", ...span(100, 100.9) }],
    hang: ["fail", { exitCode: 124, timedOut: true, ...span(100, 101.6) }],
    noisy: ["ok", { exitCode: 0, tflops: 30, ...span(100, 103) }],
  };
  const out: ChaosEvent[] = [
    ev(V, "baseline", "invoke", { scenario: r.baseline }),
    ev(V, "baseline", "ok", {
      scenario: r.baseline,
      exitCode: 0,
      tflops: 30.0,
      errors: 0,
      samples: samples(30),
    }),
    ev(A, "fault", "invoke", { scenario: s, fault }),
    ev(V, "load", "invoke", { scenario: s }),
  ];
  const add = (e: ChaosEvent) => {
    const p = patch[e.op];
    if (p) {
      const { type, ...data } = p;
      const merged = { ...e.data, ...data };
      // A patched throughput is what every interval sample showed, unless the patch says.
      if (data.tflops !== undefined && data.samples === undefined)
        merged.samples = samples(data.tflops);
      out.push({ ...e, type: type ?? e.type, data: merged });
    } else out.push(e);
  };
  const [t, d] = aggressorEnd[fault];
  add(ev(A, "fault", t, { scenario: s, ...d }));
  add(
    ev(V, "load", "ok", {
      scenario: s,
      exitCode: 0,
      tflops: 29.8,
      errors: 0,
      cudaErrors: [],
      samples: samples(29.8),
      ...span(100.02, 103.1),
    }),
  );
  if (fault === "oom") add(ev(V, "memcheck", "ok", { scenario: s, exitCode: 0, checks: [true] }));
  add(ev("gpu0", "dmesg", "ok", { scenario: s, xids: fault === "crash" ? [XID_A] : [] }));
  add(ev(A, "recovery", "ok", { scenario: s, exitCode: 0, tflops: 30.1, errors: 0 }));
  return out;
}

describe("isolation verdicts (pure, over hand-made histories)", () => {
  it("every verdict passes on a clean history of each fault", () => {
    for (const f of ["oom", "crash", "kill", "hang", "noisy"] as const) {
      const vs = judgeScenario(history(f), ref(f));
      assert.deepEqual(
        vs.map((v) => [v.name, v.status]),
        [
          ["victimsUnaffected", "passed"],
          ["faultContained", "passed"],
          ["xidAttributed", "passed"],
          ["recovered", "passed"],
        ],
        `${f}: ${vs.map((v) => v.summary).join(" | ")}`,
      );
    }
  });

  describe("victimsUnaffected", () => {
    it("passes within the tolerance and reports both figures", () => {
      const v = victimsUnaffected(history("crash", { load: { tflops: 28.6 } }), ref("crash"));
      assert.equal(v.status, "passed", v.summary);
      assert.equal(v.evidence.figures[`${V} baseline TFLOP/s`], 30);
      assert.equal(v.evidence.figures[`${V} under fault TFLOP/s`], 28.6);
    });
    it("fails a victim slowed beyond the tolerance, and the tolerance is configurable", () => {
      const h = history("oom", { load: { tflops: 15 } });
      const v = victimsUnaffected(h, ref("oom"));
      assert.equal(v.status, "failed");
      assert.match(v.summary, /ran at 50\.0% of its baseline/);
      assert.ok(!Object.keys(v.evidence.figures).some((k) => k.endsWith(" died")), "slowed, alive");
      assert.equal(victimsUnaffected(h, ref("oom"), { tolerance: 0.6 }).status, "passed");
    });
    it("fails a victim that died of the neighbour's fault, quoting its error", () => {
      const msg = "CUDA error: an illegal memory access was encountered (stress.cu:88)";
      const v = victimsUnaffected(
        history("crash", {
          load: {
            type: "fail",
            exitCode: 2,
            cudaErrors: [{ kind: "illegal-address", message: msg }],
          },
        }),
        ref("crash"),
      );
      assert.equal(v.status, "failed");
      assert.match(v.summary, /died \(exit 2\).*illegal-address/);
      assert.ok(v.evidence.logLines.includes(msg));
      // The pictures read this, never the throughput it printed before dying.
      const died = Object.entries(v.evidence.figures).filter(([k]) => k.endsWith(" died"));
      assert.deepEqual(
        died.map(([, x]) => x),
        [true],
      );
    });
    it("fails a victim that hung until its deadline", () => {
      const v = victimsUnaffected(
        // Killed at its deadline, it may leave no end record: still judged, never excused.
        history("crash", {
          load: { type: "fail", timedOut: true, exitCode: 137, nodeSpan: undefined },
        }),
        ref("crash"),
      );
      assert.equal(v.status, "failed");
      assert.match(v.summary, /stopped progressing/);
    });
    it("is broken when the crash struck before a victim started or after it ended (node's records)", () => {
      const late = victimsUnaffected(
        history("crash", { load: { nodeSpan: { startS: 101.5, endS: 104.5 } } }),
        ref("crash"),
      );
      assert.equal(late.status, "broken", late.summary);
      assert.match(
        late.summary,
        /did not land while the victims ran: .* started 0\.6 s after the fault struck/,
      );
      const early = victimsUnaffected(
        history("kill", { load: { nodeSpan: { startS: 97, endS: 100.5 } } }),
        ref("kill"),
      );
      assert.equal(early.status, "broken", early.summary);
      assert.match(early.summary, /had ended 0\.4 s before the fault struck/);
      // Just inside: running when it struck, with most of its run still to come.
      const inside = victimsUnaffected(
        history("crash", { load: { nodeSpan: { startS: 100.8, endS: 103.8 } } }),
        ref("crash"),
      );
      assert.equal(inside.status, "passed", inside.summary);
    });
    it("is broken when a held fault barely overlapped the victim, or its record is missing", () => {
      const apart = victimsUnaffected(
        history("hang", { load: { nodeSpan: { startS: 101.2, endS: 104.2 } } }),
        ref("hang"),
      );
      assert.equal(apart.status, "broken", apart.summary);
      assert.match(apart.summary, /shared 0\.4 s of its 3\.0 s with the fault's window/);
      const unknown = victimsUnaffected(
        history("oom", { fault: { nodeSpan: undefined } }),
        ref("oom"),
      );
      assert.equal(unknown.status, "broken", unknown.summary);
      assert.match(unknown.summary, /record of when the fault ran is missing/);
    });
    it("still fails a victim that died, even one that started after the crash", () => {
      const v = victimsUnaffected(
        history("crash", {
          load: { type: "fail", exitCode: 2, nodeSpan: { startS: 101.5, endS: 101.9 } },
        }),
        ref("crash"),
      );
      assert.equal(v.status, "failed", v.summary);
    });
    it("fails a victim that cannot allocate its memory after the aggressor's OOM", () => {
      const v = victimsUnaffected(
        history("oom", { memcheck: { type: "fail", exitCode: 1, checks: [false] } }),
        ref("oom"),
      );
      assert.equal(v.status, "failed");
      assert.match(v.summary, /could not allocate its memory/);
    });
    it("is broken, not failed, when the harness lost the node", () => {
      const h = history("crash", {
        load: {
          type: "info",
          harnessError: "[SSH_DISCONNECTED] connection lost",
          tflops: undefined,
        },
      });
      const v = victimsUnaffected(h, ref("crash"));
      assert.equal(v.status, "broken");
      assert.ok(judgeScenario(h, ref("crash")).every((x) => x.status === "broken"));
    });
  });

  describe("faultContained", () => {
    it("fails an OOM aggressor that never ran out of memory", () => {
      const v = faultContained(history("oom", { fault: { oom: false } }), ref("oom"));
      assert.equal(v.status, "failed");
      assert.match(v.summary, /expected an out-of-memory error/);
    });
    it("fails a crash that exited 0 without the CUDA error", () => {
      const v = faultContained(
        history("crash", { fault: { type: "ok", exitCode: 0, cudaErrors: [] } }),
        ref("crash"),
      );
      assert.equal(v.status, "failed");
    });
    it("fails a kill that did not die by SIGKILL, and a hang that was not killed at its deadline", () => {
      assert.equal(
        faultContained(history("kill", { fault: { signal: null, exitCode: 0 } }), ref("kill"))
          .status,
        "failed",
      );
      assert.equal(
        faultContained(history("hang", { fault: { timedOut: false, exitCode: 0 } }), ref("hang"))
          .status,
        "failed",
      );
    });
    it("fails a noisy neighbour that did not run", () => {
      const v = faultContained(
        history("noisy", { fault: { type: "fail", exitCode: 2 } }),
        ref("noisy"),
      );
      assert.equal(v.status, "failed");
    });
  });

  describe("xidAttributed", () => {
    it("fails when the Xid names another instance", () => {
      const wrong = {
        ...XID_A,
        gpuInstanceId: 2,
        line: XID_A.line.replace("GPU-I:01", "GPU-I:02"),
      };
      const v = xidAttributed(history("crash", { dmesg: { xids: [wrong] } }), ref("crash"));
      assert.equal(v.status, "failed");
      assert.match(v.summary, /Xid 31 on GI 2/);
      assert.deepEqual(v.evidence.logLines, [wrong.line]);
    });
    it("fails a crash that left no Xid, and passes an OOM without one with a note", () => {
      assert.equal(
        xidAttributed(history("crash", { dmesg: { xids: [] } }), ref("crash")).status,
        "failed",
      );
      const oom = xidAttributed(history("oom"), ref("oom"));
      assert.equal(oom.status, "passed");
      assert.match(oom.summary, /no Xid expected for oom/);
    });
    it("fails an OOM whose window shows an Xid on a victim", () => {
      const wrong = { ...XID_A, gpuInstanceId: 2 };
      assert.equal(
        xidAttributed(history("oom", { dmesg: { xids: [wrong] } }), ref("oom")).status,
        "failed",
      );
    });
  });

  describe("recovered", () => {
    it("fails when the aggressor's instance cannot run a stress again", () => {
      const v = recovered(
        history("crash", { recovery: { type: "fail", exitCode: 2, tflops: undefined } }),
        ref("crash"),
      );
      assert.equal(v.status, "failed");
      assert.match(v.summary, /did not run a stress again \(exit 2\)/);
    });
    it("fails when a reset-class Xid says the GPU needed a reset", () => {
      const reset = {
        ...XID_A,
        xid: 79,
        line: "NVRM: Xid (PCI:0000:07:00): 79, GPU has fallen off the bus.",
      };
      const v = recovered(history("crash", { dmesg: { xids: [XID_A, reset] } }), ref("crash"));
      assert.equal(v.status, "failed");
      assert.match(v.summary, /GPU reset/);
    });
  });
});

describe("measurement discipline (pure)", () => {
  const crash = ref("crash");
  const retried = (h: ChaosEvent[], load: Partial<EventData>): ChaosEvent[] => [
    ...h,
    ev(V, "baseline", "ok", {
      scenario: crash.scenario,
      attempt: 2,
      exitCode: 0,
      tflops: 30,
      samples: samples(30),
    }),
    // The second measurement faults again, beside the victims (the node's records, its clock).
    ev(A, "fault", "fail", {
      scenario: crash.scenario,
      attempt: 2,
      exitCode: 2,
      nodeSpan: { startS: 200, endS: 200.9 },
    }),
    ev(V, "load", "ok", {
      scenario: crash.scenario,
      attempt: 2,
      exitCode: 0,
      errors: 0,
      nodeSpan: { startS: 200.02, endS: 203.1 },
      ...load,
    }),
  ];

  it("a slowdown within the baseline's own spread is noise, not a violation", () => {
    const noisy = samples(30, 0.1); // ±10 % per sample
    const h = history("crash", { load: { tflops: 27, samples: samples(27, 0.1) } }).map((e) =>
      e.op === "baseline" && e.type === "ok" ? { ...e, data: { ...e.data, samples: noisy } } : e,
    );
    const v = victimsUnaffected(h, crash);
    assert.equal(v.status, "passed", v.summary);
    assert.ok((v.evidence.figures[`${V} allowed drop`] as number) > 0.1);
  });

  it("a slowdown is re-measured once before it fails: noise passes, a leak fails again", () => {
    const slow = history("crash", { load: { tflops: 15 } });
    assert.match(remeasureReason(slow, crash) ?? "", /ran at 50\.0% of its baseline/);
    const cleared = victimsUnaffected(
      retried(slow, { tflops: 29.9, samples: samples(29.9) }),
      crash,
    );
    assert.equal(cleared.status, "passed", cleared.summary);
    assert.match(cleared.summary, /re-measured and unaffected.*first measurement: .*50\.0%/);
    const again = victimsUnaffected(retried(slow, { tflops: 15, samples: samples(15) }), crash);
    assert.equal(again.status, "failed");
    assert.match(again.summary, /re-measured: .*50\.0%/);
    assert.equal(remeasureReason(retried(slow, { tflops: 15, samples: samples(15) }), crash), null);
  });

  it("a fault that missed the victims is re-measured once: the second measurement decides", () => {
    // The crash (at 100.9 s on the node's clock) struck after the victim's run had ended.
    const missed = history("crash", { load: { nodeSpan: { startS: 97, endS: 100.5 } } });
    assert.match(remeasureReason(missed, crash) ?? "", /did not land while the victims ran/);
    const cleared = victimsUnaffected(retried(missed, { tflops: 30, samples: samples(30) }), crash);
    assert.equal(cleared.status, "passed", cleared.summary);
    assert.match(cleared.summary, /re-measured and unaffected.*first measurement: .*did not land/);
    // Missed again: undecided, and not measured a third time.
    const again = retried(missed, {
      tflops: 30,
      samples: samples(30),
      nodeSpan: { startS: 201, endS: 204 },
    });
    assert.equal(victimsUnaffected(again, crash).status, "broken");
    assert.equal(remeasureReason(again, crash), null);
  });

  it("a victim killed by its neighbour's fault is not re-measured: it fails at once", () => {
    const h = history("crash", {
      load: {
        type: "fail",
        exitCode: 2,
        cudaErrors: [{ kind: "illegal-address", message: "illegal memory access" }],
      },
    });
    assert.equal(remeasureReason(h, crash), null);
    assert.equal(victimsUnaffected(h, crash).status, "failed");
  });

  it("a workload cut short is a disturbed measurement: broken with the launcher's reason", () => {
    const h = history("crash", {
      load: { incomplete: "stopped by SIGTERM after 0.4 s of 1.5 s" },
    });
    const v = victimsUnaffected(h, crash);
    assert.equal(v.status, "broken");
    assert.match(v.summary, /measurement was disturbed: .*stopped by SIGTERM after 0\.4 s/);
  });

  it("too few samples, an overrun deadline, or a stalled controller: broken, never failed", () => {
    const few = victimsUnaffected(
      history("crash", { load: { samples: samples(29.8).slice(0, 2) } }),
      crash,
    );
    assert.equal(few.status, "broken");
    assert.match(few.summary, /printed 2 sample\(s\)/);
    const overrun = victimsUnaffected(
      history("crash", {
        load: { type: "fail", timedOut: true, exitCode: 124, durationS: 1.5, intervalS: 0.3 },
      }),
      // (its five samples run from 0.3 s to 1.5 s: the whole duration)
      crash,
    );
    assert.equal(overrun.status, "broken", overrun.summary);
    assert.match(overrun.summary, /deadline was overrun/);
    const stalled = victimsUnaffected(
      history("crash", { load: { tflops: 15, controllerStallMs: 4200 } }),
      crash,
    );
    assert.equal(stalled.status, "broken");
    assert.match(stalled.summary, /control machine stalled for 4\.2 s/);
    // A hang still fails: its samples stop long before its duration.
    const hung = victimsUnaffected(
      history("crash", {
        load: {
          type: "fail",
          timedOut: true,
          exitCode: 124,
          durationS: 1.5,
          intervalS: 0.3,
          samples: samples(29.8).slice(0, 1),
        },
      }),
      crash,
    );
    assert.equal(hung.status, "failed", hung.summary);
    // Nor does a victim that hung late in a short run read as an overrun deadline.
    const late = victimsUnaffected(
      history("crash", {
        load: {
          type: "fail",
          timedOut: true,
          exitCode: 124,
          durationS: 1,
          intervalS: 0.2,
          samples: samples(29.8)
            .slice(0, 3)
            .map((x, i) => ({ ...x, t: (i + 1) * 0.2 })),
        },
      }),
      crash,
    );
    assert.equal(late.status, "failed", late.summary);
    assert.match(hung.summary, /stopped progressing after 0\.3 s of 1\.5 s/);
  });

  it("a spoiled baseline is named as such, never read as a victim's failure", () => {
    const h = history("crash").map((e) =>
      e.op === "baseline" && e.type === "ok"
        ? { ...e, type: "fail" as const, data: { ...e.data, timedOut: true, exitCode: 124 } }
        : e,
    );
    const v = victimsUnaffected(h, crash);
    assert.equal(v.status, "broken");
    assert.match(
      v.summary,
      /no baseline throughput to compare with: it was killed at its deadline/,
    );
    assert.match(baselineProblem(h, crash.baseline, 1) ?? "", /killed at its deadline/);
  });

  it("an OOM's memory check must come after the load window and before the memory is released", () => {
    const oom = ref("oom");
    const h = history("oom").map((e) =>
      e.op === "memcheck"
        ? { ...e, time: "2026-11-29T10:00:05.000Z" }
        : e.op === "fault" && e.type !== "invoke"
          ? { ...e, time: "2026-11-29T10:00:02.000Z" }
          : e,
    );
    h.push({ ...h.find((e) => e.op === "memcheck")!, type: "invoke" });
    const v = victimsUnaffected(h, oom);
    assert.equal(v.status, "broken");
    assert.match(v.summary, /after the aggressor had released its memory/);
  });
});

describe("exclusivity of a whole-card instance (pure)", () => {
  const LGI = [
    "+-------------------------------------------------------+",
    "| GPU instances:                                        |",
    "| GPU   Name             Profile  Instance   Placement  |",
    "|                          ID       ID       Start:Size |",
    "|=======================================================|",
    "|   0  MIG 7g.80gb          0        0          0:8     |",
    "+-------------------------------------------------------+",
  ].join("\n");
  const X: ScenarioRef = {
    scenario: "n1/gpu0/gi0/ci0/exclusive",
    baseline: "n1/gpu0/gi0/ci0/exclusive",
    fault: "exclusive",
    aggressor: "gpu0/gi0/ci0",
    gpuInstanceId: 0,
    computeInstanceId: 0,
  };
  const h = (apps: string, lgi = LGI): ChaosEvent[] => [
    ev("gpu0/gi0/ci0", "load", "ok", {
      scenario: X.scenario,
      exitCode: 0,
      tflops: 60,
      samples: samples(60),
    }),
    ev("gpu0", "exclusivity", "ok", {
      scenario: X.scenario,
      exclusivity: { gpuUuid: "GPU-1", lgiExit: 0, lgi, appsExit: 0, apps },
    }),
  ];
  it("passes with one GPU instance and only the tenant's stress on the GPU", () => {
    const v = exclusivity(h("4242, slicecheck-stress, GPU-1, 520 MiB\n"), X);
    assert.equal(v.status, "passed", v.summary);
  });
  it("fails when another CUDA context shares the card", () => {
    const v = exclusivity(
      h("4242, slicecheck-stress, GPU-1, 520 MiB\n31000, python3, GPU-1, 2048 MiB\n"),
      X,
    );
    assert.equal(v.status, "failed");
    assert.match(v.summary, /another CUDA context .*pid 31000 \(python3, 2048 MiB\)/);
  });
  it("fails when the GPU holds more than the one whole-card GPU instance", () => {
    const two = LGI.replace(
      "|   0  MIG 7g.80gb          0        0          0:8     |",
      "|   0  MIG 4g.40gb          5        1          0:4     |\n" +
        "+-------------------------------------------------------+\n" +
        "|   0  MIG 3g.40gb          9        2          4:4     |",
    );
    const v = exclusivity(h("", two), X);
    assert.equal(v.status, "failed", v.summary);
    assert.match(v.summary, /holds 2 GPU instances/);
  });
});

describe("victimsUnaffected's remaining branches (pure)", () => {
  const crash = ref("crash");

  it("is broken when no victim ran, or a victim had no baseline at all", () => {
    const none = victimsUnaffected(
      history("crash").filter((e) => e.op !== "load"),
      crash,
    );
    assert.deepEqual([none.status, none.summary], ["broken", "no victim ran during the fault"]);
    const noBase = victimsUnaffected(
      history("crash").filter((e) => e.op !== "baseline"),
      crash,
    );
    assert.equal(noBase.status, "broken");
    assert.equal(
      noBase.summary,
      `${V}: no baseline throughput to compare with (none was measured)`,
    );
    assert.equal(noBase.evidence.figures[`${V} under fault TFLOP/s`], 29.8);
  });

  it("a memory check cut short is a disturbance; a hard failure outranks it", () => {
    const oom = ref("oom");
    const cut = victimsUnaffected(history("oom", { memcheck: { incomplete: "was stopped" } }), oom);
    assert.equal(cut.status, "broken");
    assert.match(cut.summary, new RegExp(`${V}'s memory check was stopped`));
    const died = victimsUnaffected(
      history("oom", { memcheck: { incomplete: "was stopped" }, load: { errors: 2 } }),
      oom,
    );
    assert.equal(died.status, "failed");
    assert.equal(died.summary, `${V} computed 2 wrong result(s)`);
    assert.equal(died.evidence.figures[`${V} memory checks failed`], 0);
  });

  it("reports the victims' utilization under the fault, and labels too few samples", () => {
    const s = crash.scenario;
    const util = (victims: Record<string, unknown>) => [
      ...history("crash"),
      ev("gpu0", "utilization", "ok", {
        scenario: s,
        utilization: { source: "dcgm", victims },
      } as Partial<EventData> & { scenario: string }),
    ];
    const v = victimsUnaffected(
      util({ [V]: { smActiveMean: 61.5, memUsedMaxMiB: 2048, samples: 9 } }),
      crash,
    );
    assert.equal(v.status, "passed", v.summary);
    assert.equal(v.evidence.figures[`${V} SM active % under fault`], 61.5);
    assert.equal(v.evidence.figures[`${V} memory used MiB under fault`], 2048);
    assert.equal(v.evidence.figures["utilization source"], "dcgm");
    const few = victimsUnaffected(
      util({ [V]: { smActiveMean: null, memUsedMaxMiB: null, samples: 2 } }),
      crash,
    );
    assert.equal(
      few.evidence.figures[`${V} utilization under fault`],
      "insufficient (2 sample(s))",
    );
    assert.equal(few.evidence.figures[`${V} SM active % under fault`], undefined);
  });
});
