// The argv arrays slicecheck sends, and the arguments it refuses to send.

import assert from "node:assert/strict";
import { SlicecheckError } from "../../src/errors.js";
import {
  createComputeInstances,
  createGpuInstances,
  destroyComputeInstances,
  destroyGpuInstances,
  listComputeInstanceProfiles,
  listComputeInstances,
  listGpuInstancePlacements,
  listGpuInstanceProfiles,
  listGpuInstances,
  listGpus,
  queryComputeApps,
  queryGpu,
  resetGpu,
  setMigMode,
} from "../../src/nvsmi/index.js";

function refused(fn: () => unknown): void {
  assert.throws(fn, (e) => e instanceof SlicecheckError && e.code === "USAGE");
}

describe("nvsmi commands", () => {
  it("builds the listing commands", () => {
    assert.deepEqual(listGpus(), ["nvidia-smi", "-L"]);
    assert.deepEqual(listGpuInstances(0), ["nvidia-smi", "mig", "-lgi", "-i", "0"]);
    assert.deepEqual(listGpuInstances(), ["nvidia-smi", "mig", "-lgi"]);
    assert.deepEqual(listGpuInstanceProfiles(1), ["nvidia-smi", "mig", "-lgip", "-i", "1"]);
    assert.deepEqual(listGpuInstancePlacements("00000000:3B:00.0"), [
      "nvidia-smi",
      "mig",
      "-lgipp",
      "-i",
      "00000000:3B:00.0",
    ]);
    assert.deepEqual(listComputeInstances(0, 1), [
      "nvidia-smi",
      "mig",
      "-lci",
      "-i",
      "0",
      "-gi",
      "1",
    ]);
    assert.deepEqual(listComputeInstanceProfiles(0, 2), [
      "nvidia-smi",
      "mig",
      "-lcip",
      "-i",
      "0",
      "-gi",
      "2",
    ]);
  });

  it("builds -cgi with profile:start placements and -C", () => {
    assert.deepEqual(createGpuInstances(0, [9, 9]), [
      "nvidia-smi",
      "mig",
      "-cgi",
      "9,9",
      "-C",
      "-i",
      "0",
    ]);
    assert.deepEqual(
      createGpuInstances(
        0,
        [{ profile: 19, start: 6 }, { profile: "MIG 1g.10gb+me", start: 4 }, "3g.40gb"],
        {
          defaultComputeInstance: false,
        },
      ),
      ["nvidia-smi", "mig", "-cgi", "19:6,1g.10gb+me:4,3g.40gb", "-i", "0"],
    );
  });

  it("builds -cci, -dci and -dgi", () => {
    assert.deepEqual(createComputeInstances(0, 1, [0, 0, 0]), [
      "nvidia-smi",
      "mig",
      "-cci",
      "0,0,0",
      "-gi",
      "1",
      "-i",
      "0",
    ]);
    assert.deepEqual(createComputeInstances(0, 1), [
      "nvidia-smi",
      "mig",
      "-cci",
      "-gi",
      "1",
      "-i",
      "0",
    ]);
    assert.deepEqual(destroyComputeInstances(0, [1], [0, 1]), [
      "nvidia-smi",
      "mig",
      "-dci",
      "-gi",
      "1",
      "-ci",
      "0,1",
      "-i",
      "0",
    ]);
    assert.deepEqual(destroyGpuInstances(0), ["nvidia-smi", "mig", "-dgi", "-i", "0"]);
    assert.deepEqual(destroyGpuInstances(0, [1, 2]), [
      "nvidia-smi",
      "mig",
      "-dgi",
      "-gi",
      "1,2",
      "-i",
      "0",
    ]);
  });

  it("builds -mig, --gpu-reset and the csv queries", () => {
    assert.deepEqual(setMigMode(true, 0), ["nvidia-smi", "-mig", "1", "-i", "0"]);
    assert.deepEqual(setMigMode(false), ["nvidia-smi", "-mig", "0"]);
    assert.deepEqual(resetGpu([0, 1]), ["nvidia-smi", "--gpu-reset", "-i", "0,1"]);
    assert.deepEqual(queryGpu(["uuid", "mig.mode.current", "mig.mode.pending"]), [
      "nvidia-smi",
      "--query-gpu=uuid,mig.mode.current,mig.mode.pending",
      "--format=csv,nounits",
    ]);
    assert.deepEqual(queryGpu(["index"], { gpu: 0, header: false, units: true }), [
      "nvidia-smi",
      "--query-gpu=index",
      "--format=csv,noheader",
      "-i",
      "0",
    ]);
    assert.deepEqual(queryComputeApps(["pid", "used_memory"]), [
      "nvidia-smi",
      "--query-compute-apps=pid,used_memory",
      "--format=csv,nounits",
    ]);
  });

  it("refuses arguments that are no GPU, profile, id or field", () => {
    refused(() => listGpuInstances("0; reboot"));
    refused(() => listGpuInstances(-1));
    refused(() => createGpuInstances(0, ["3g.40gb -C"]));
    refused(() => createGpuInstances(0, []));
    refused(() => createGpuInstances(0, [{ profile: 19, start: 1.5 }]));
    refused(() => destroyGpuInstances(0, []));
    refused(() => queryGpu(["uuid,name"]));
    refused(() => resetGpu([]));
  });
});
