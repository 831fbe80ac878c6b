// A process `sim fault` planted (foreign-process, tenant) has no real process behind it: its pid
// may belong to any process of this machine at any moment. The simulated workloads time-sliced
// with it exactly when one did, so a stress beside a planted foreign process ran at half its
// share now and then (the foreign-process test of suites.test.ts, CI of 6 December 2026).
import assert from "node:assert/strict";
import { plantFault } from "../../src/faults.js";
import { visibleDevices } from "../../src/workloads/device.js";
import { sharersOf } from "../../src/workloads/session.js";
import { cleanup, node, state } from "./helpers.js";

describe("sim: planted processes beside the simulated workloads", () => {
  after(cleanup);

  it("a planted foreign process never time-slices with a workload, whoever holds its pid; a real one does", async () => {
    const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 9,9 -C");
    await plantFault(dir, "foreign-process", { gpu: 0 });
    const s = state(dir);
    const foreign = s.gpus[0]!.processes[0]!;
    // Its pid, now held by a live process of this machine (this one).
    foreign.pid = process.pid;
    const gi = s.gpus[0]!.gis.find((g) => g.id === foreign.gi)!;
    const [dev] = visibleDevices(s, gi.cis[0]!.uuid);
    assert.ok(dev && dev.gi?.id === foreign.gi, "the device is the foreign process's instance");
    const self = 4_000_000; // the workload asking: counted whatever its pid
    assert.equal(sharersOf(s, dev, self), 1, "the planted process was taken for a sharer");
    // The same entry as a process the simulator started: it computes beside the workload.
    const { planted: _, ...real } = foreign;
    s.gpus[0]!.processes.push({ ...real, pid: process.ppid });
    assert.equal(sharersOf(s, dev, self), 2);
  });
});
