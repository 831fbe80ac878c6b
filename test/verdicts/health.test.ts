// The health verdicts on hand-made facts: a critical Xid always fails, an injected fault excuses
// only the Xids its kind produces on its aggressor, and a lost GPU is one failure domain.
import assert from "node:assert/strict";
import { CRITICAL_XIDS, healthChecks, type NodeHealthFacts } from "../../src/verdicts/health.js";

const ROWS =
  "0, 00000000:07:00.0, 580.65.06, Enabled, 0\n1, 00000000:0A:00.0, 580.65.06, Enabled, 0\n";
const xid = (bus: string, n: number, mig = "") =>
  `[ 20.000000] NVRM: Xid (PCI:0000:${bus}:00${mig}): ${n}, pid=4242, name=slicecheck-cras, Ch 00000008`;

function facts(after: string[], more: Partial<NodeHealthFacts> = {}): NodeHealthFacts {
  return {
    node: "n1",
    smiExit: 0,
    smiOutput: ROWS,
    dmesgBefore: [],
    dmesgAfter: after,
    injected: [],
    gpus: [
      { index: 0, instances: ["gpu0/gi1/ci0", "gpu0/gi2/ci0"] },
      { index: 1, instances: ["gpu1/gi1/ci0", "gpu1/gi2/ci0"] },
    ],
    ...more,
  };
}

const check = (cs: ReturnType<typeof healthChecks>, title: RegExp) => {
  const c = cs.find((x) => title.test(x.title));
  assert.ok(c, `a check ${title}: ${cs.map((x) => x.title).join(", ")}`);
  return c;
};

describe("health verdicts (pure)", () => {
  it("lists the critical Xids with the ones Azure's health checks use", () => {
    for (const x of [
      48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120,
    ])
      assert.ok(CRITICAL_XIDS.has(x), String(x));
    for (const x of [13, 31, 43]) assert.ok(!CRITICAL_XIDS.has(x), String(x));
  });

  it("a critical Xid is never excused, whatever fault the isolation suite injected", () => {
    for (const fault of ["kill", "crash", "oom", "hang", "noisy"]) {
      const cs = healthChecks(
        facts([xid("07", 79, " GPU-I:01 GPU-CI:00")], {
          injected: [{ gpu: 0, fault, gpuInstanceId: 1, computeInstanceId: 0 }],
        }),
      );
      const c = check(cs, /GPU 0 logged no new Xid/);
      assert.equal(c.status, "failed", `${fault}: ${c.message}`);
      assert.match(c.message, /critical Xid 79 .*never excused/);
    }
  });

  it("excuses only the Xids the injected fault kind produces on its aggressor's GI/CI", () => {
    const crash = [{ gpu: 0, fault: "crash", gpuInstanceId: 1, computeInstanceId: 0 }];
    const mine = healthChecks(facts([xid("07", 31, " GPU-I:01 GPU-CI:00")], { injected: crash }));
    assert.equal(check(mine, /GPU 0 logged/).status, "passed");
    assert.match(check(mine, /GPU 0 logged/).message, /note: .*isolation suite's injected fault/);
    // The same Xid on the neighbour's GI, on the other GPU, or after a kill: not explained.
    const other = healthChecks(facts([xid("07", 31, " GPU-I:02 GPU-CI:00")], { injected: crash }));
    assert.equal(check(other, /GPU 0 logged/).status, "failed");
    const gpu1 = healthChecks(facts([xid("0a", 31, " GPU-I:01 GPU-CI:00")], { injected: crash }));
    assert.equal(check(gpu1, /GPU 1 logged/).status, "failed");
    const kill = healthChecks(
      facts([xid("07", 43, " GPU-I:01 GPU-CI:00")], {
        injected: [{ gpu: 0, fault: "kill", gpuInstanceId: 1, computeInstanceId: 0 }],
      }),
    );
    assert.equal(check(kill, /GPU 0 logged/).status, "failed");
  });

  it("a GPU that fell off the bus is one failure domain: every instance on it is lost", () => {
    const lost =
      "Unable to determine the device handle for GPU0000:0A:00.0: GPU is lost.  Reboot the system to recover this GPU\n";
    const cs = healthChecks(
      facts(
        [
          "[ 30.000000] NVRM: Xid (PCI:0000:0a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
          "[ 30.000001] NVRM: GPU 0000:0a:00.0: GPU has fallen off the bus.",
        ],
        {
          smiExit: 15,
          smiOutput: `${lost}0, 00000000:07:00.0, 580.65.06, Enabled, 0\n`,
          injected: [{ gpu: 1, fault: "kill", gpuInstanceId: 1, computeInstanceId: 0 }],
        },
      ),
    );
    const d = check(cs, /GPU 1 failure domain/);
    assert.equal(d.status, "failed");
    assert.equal(d.gpu, 1);
    assert.match(
      d.message,
      /is lost: every instance on it is lost with it \(2: gpu1\/gi1\/ci0, gpu1\/gi2\/ci0\)/,
    );
    assert.match(d.message, /runtime isolation, not redundancy/);
    assert.equal(check(cs, /GPU 1 logged no new Xid/).status, "failed");
    assert.equal(check(cs, /GPU 1 driver answers/).status, "failed");
    assert.equal(check(cs, /GPU 1 persistence/).status, "broken");
    // The GPU still on the bus is its own failure domain, up.
    assert.equal(check(cs, /GPU 0 failure domain/).status, "passed");
    assert.equal(check(cs, /GPU 0 logged no new Xid/).status, "passed");
    assert.equal(
      cs.filter((x) => x.status === "failed" && /failure domain/.test(x.title)).length,
      1,
    );
  });

  it("an Xid 79 on a GPU that still answers makes it lost all the same; an ECC count fails", () => {
    const cs = healthChecks(
      facts(["[ 30.000000] NVRM: GPU 0000:07:00.0: GPU has fallen off the bus."], {
        smiOutput: "0, 00000000:07:00.0, 580.65.06, Enabled, 1\n",
      }),
    );
    assert.equal(check(cs, /GPU 0 failure domain/).status, "failed");
    assert.equal(check(cs, /GPU 0 has no uncorrected ECC/).status, "failed");
  });

  it("nvidia-smi not run, unreadable, or failing: one driver check, broken or failed", () => {
    const notRun = healthChecks(facts([], { smiExit: null, smiOutput: "ssh: lost" }));
    assert.equal(notRun.length, 1);
    assert.equal(notRun[0]!.status, "broken");
    assert.equal(notRun[0]!.message, "nvidia-smi could not be run on n1: ssh: lost");
    const garbled = healthChecks(facts([], { smiOutput: "x, y\n" }));
    assert.equal(garbled[0]!.status, "broken");
    assert.match(garbled[0]!.message, /^nvidia-smi on n1: unexpected nvidia-smi line: 'x, y'$/);
    const failing = healthChecks(
      facts([], { smiExit: 9, smiOutput: " NVML: driver not loaded \n" }),
    );
    assert.equal(failing[0]!.status, "failed");
    assert.equal(failing[0]!.message, "nvidia-smi on n1 exited 9: NVML: driver not loaded");
    // Exit 15 without a lost GPU's line, or no GPU at all: no answer either.
    assert.equal(healthChecks(facts([], { smiExit: 15 }))[0]!.status, "failed");
    assert.equal(healthChecks(facts([], { smiOutput: "\n" }))[0]!.title, "n1 driver answers");
  });

  it("an unreadable kernel log is broken; an unexplained Xid names the faults injected", () => {
    const unread = healthChecks(facts([], { dmesgAfter: null }));
    assert.equal(check(unread, /GPU 0 logged no new Xid/).status, "broken");
    assert.equal(check(unread, /GPU 0 logged/).message, "could not read the kernel log of n1");
    const other = healthChecks(
      facts([xid("07", 13, " GPU-I:02 GPU-CI:00")], {
        injected: [{ gpu: 0, fault: "crash", gpuInstanceId: 1, computeInstanceId: 0 }],
      }),
    );
    const c = check(other, /GPU 0 logged/);
    assert.equal(c.code, "XID");
    assert.match(
      c.message,
      /^1 new Xid line\(s\) on n1 GPU 0 \(0000:07:00\) .*\(injected: crash on GI 1\): /,
    );
    assert.equal(c.attachment?.name, "new Xid lines");
  });

  it("ECC and persistence are reported as the GPU gives them", () => {
    const cs = healthChecks(
      facts([], { smiOutput: "0, 00000000:07:00.0, 580.65.06, Disabled, [N/A]\n" }),
    );
    const ecc = check(cs, /GPU 0 has no uncorrected ECC/);
    assert.equal(ecc.status, "passed");
    assert.match(ecc.message, /\[N\/A\]; note: this GPU does not report the count/);
    assert.match(check(cs, /GPU 0 persistence/).message, /^persistence mode Off \(Disabled\)/);
    assert.equal(check(cs, /GPU 0 driver answers/).parameters["driver version"], "580.65.06");
  });

  it("a lost GPU whose index cannot be told is named by its bus", () => {
    const lost =
      "Unable to determine the device handle for GPU0000:0A:00.0: GPU is lost.  Reboot the system to recover this GPU\n";
    // Two GPUs missing from the rows but one lost line: which index it had is not known.
    const cs = healthChecks(
      facts([], {
        smiExit: 15,
        smiOutput: lost,
        gpus: [...facts([]).gpus!, { index: 2, instances: [] }],
      }),
    );
    const d = check(cs, /0000:0a:00 failure domain/);
    assert.equal(d.gpu, null);
    assert.equal(d.status, "failed");
    assert.equal(d.title, "n1 GPU 0000:0a:00 failure domain");
    assert.match(d.message, /is lost: every instance on it is lost with it\. MIG/);
  });
});
