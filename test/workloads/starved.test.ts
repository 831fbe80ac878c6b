// A workload that runs into its deadline on a machine too loaded to run it is undecided, never
// failed (a 4-node stress on 2 loaded cores failed STRESS_FAILED "killed at its deadline" in a
// test run of 4 December 2026). The node's recorder notes the CPU stall (PSI) around the command:
// measured here on this machine's real kernel with real spinners, and judged by pure parts.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import type { ChaosEvent, EventData } from "../../src/chaos/history.js";
import { parseEndRecord } from "../../src/transport/end-record.js";
import { wrapCommand } from "../../src/transport/remote-scripts.js";
import { deadlineOverrun } from "../../src/verdicts/measure.js";
import { STARVED_SHARE, starvedAtDeadline } from "../../src/workloads/completion.js";
import type { InstanceOutcome } from "../../src/workloads/launcher.js";
import { statusOf } from "../../src/workloads/summary.js";

const PSI = existsSync("/proc/pressure/cpu");

/** The recorder's end line of `sleep 1` run as a recorded command on CPU 0, with `spinners`
 * busy loops on the same CPU. */
async function recordedSleep(spinners: number): Promise<string> {
  const hogs = Array.from({ length: spinners }, () =>
    spawn("taskset", ["-c", "0", "sh", "-c", "while :; do :; done"], { stdio: "ignore" }),
  );
  try {
    const cmd = wrapCommand(
      { argv: ["sleep", "1"] },
      { runTag: "t", cmdTag: "c", deadlineS: 30, record: true, noWatcher: true, sudo: false },
    );
    const r = spawnSync("taskset", ["-c", "0", "sh", "-c", cmd], { encoding: "utf8" });
    const line = r.stderr.split("\n").find((l) => l.startsWith("@@slicecheck:end "));
    assert.ok(line, r.stderr);
    return line.slice("@@slicecheck:end ".length);
  } finally {
    for (const h of hogs) h.kill("SIGKILL");
  }
}

/** A victim's load under the fault that ended at its deadline. */
function isolationFixture(data: Omit<EventData, "scenario">): ChaosEvent {
  return {
    time: "2026-12-04T00:00:00Z",
    node: "n",
    gpu: 0,
    instance: "gpu0/gi1/ci0",
    process: "victim",
    op: "load",
    type: "fail",
    data: { scenario: "s", ...data },
  } as ChaosEvent;
}

function outcome(o: Partial<InstanceOutcome>): InstanceOutcome {
  return {
    exitCode: 124,
    signal: null,
    timedOut: true,
    died: true,
    harnessError: null,
    incomplete: null,
    measurements: [],
    parseError: null,
    ...o,
  } as InstanceOutcome;
}

describe("a deadline missed on a starved node (PSI cpu stall)", function () {
  this.timeout(20_000);

  it("the recorder notes the node's CPU stall while the command ran (real kernel, 3 spinners on its CPU)", async () => {
    const rec = parseEndRecord(await recordedSleep(3));
    assert.ok(rec);
    if (!PSI) return assert.equal(rec.cpuWaitMs, undefined, "no PSI: no figure, never a guess");
    assert.ok(rec.cpuWaitMs !== undefined, "PSI present: the stall is recorded");
    // Three busy loops beside the command on one CPU: some task always waits for it.
    assert.ok(rec.cpuWaitMs >= STARVED_SHARE * rec.elapsedMs, JSON.stringify(rec));
  });

  it("parses cpuwait, and an empty one (no PSI on the node) as none", () => {
    assert.equal(parseEndRecord("rc=143 start=1.0 end=34.0 cpuwait=31500000")?.cpuWaitMs, 31_500);
    assert.equal(parseEndRecord("rc=0 start=1.0 end=2.0 cpuwait=")?.cpuWaitMs, undefined);
  });

  it("starved only past the deadline and with the CPU stalled at least half the time", () => {
    const rec = (cpuWaitMs: number) => ({ elapsedMs: 33_000, cpuWaitMs });
    assert.match(
      starvedAtDeadline({ exitCode: null, endRecord: rec(30_000) }, true) ?? "",
      /stalled for 30\.0 s of its 33\.0 s/,
    );
    assert.ok(starvedAtDeadline({ exitCode: 124, endRecord: rec(20_000) }, false));
    assert.equal(starvedAtDeadline({ exitCode: null, endRecord: rec(10_000) }, true), null);
    assert.equal(starvedAtDeadline({ exitCode: 0, endRecord: rec(30_000) }, false), null);
    assert.equal(
      starvedAtDeadline({ exitCode: 124, endRecord: { elapsedMs: 33_000 } }, true),
      null,
    );
  });

  it("a starved stress is broken; a hung one on a quiet node still fails", () => {
    assert.equal(statusOf(outcome({ starved: "stalled" })), "broken");
    assert.equal(statusOf(outcome({ starved: null })), "failed");
  });

  it("isolation: a starved victim or baseline disturbs the measurement instead of failing it", () => {
    const e = isolationFixture({ timedOut: true, durationS: 3, starved: "stalled" });
    assert.match(deadlineOverrun(e) ?? "", /stalled/);
    assert.equal(deadlineOverrun(isolationFixture({ timedOut: true, durationS: 3 })), null);
  });
});
