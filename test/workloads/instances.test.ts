import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseGpus } from "../../src/nvsmi/gpus.js";
import { parseLgi } from "../../src/nvsmi/lgi.js";
import { parseTable } from "../../src/nvsmi/table.js";
import { joinInstances } from "../../src/workloads/instances.js";

const cap = (name: string) => readFileSync(`fixtures/captures/${name}`, "utf8");

describe("workload instances from real captures", () => {
  it("joins -L, the table's MIG section and -lgi of one H100 (580.173.02, mixed layout)", () => {
    const got = joinInstances(
      "n1",
      parseGpus(cap("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt")),
      parseTable(cap("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mixed.txt")),
      parseLgi(cap("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mixed.txt")),
    );
    assert.deepEqual(
      got.map((i) => [
        i.uuid,
        i.profile,
        i.gpuInstanceId,
        i.computeInstanceId,
        i.placement,
        i.sm,
        i.memoryMiB,
      ]),
      [
        ["MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092", "1c.3g.40gb", 1, 0, "0:4", 16, 40448],
        ["MIG-8443519f-66f7-5962-8955-60dba0866f3a", "1g.10gb", 11, 0, "4:1", 16, 9984],
        ["MIG-ee6996fb-86fb-5405-83f0-b20887da1bb3", "1g.10gb", 13, 0, "6:1", 16, 9984],
      ],
    );
    assert.ok(got.every((i) => i.gpuUuid === "GPU-0d0831da-0c98-2717-6446-8acd91d39b65"));
  });

  it("takes the whole GPU as the instance when MIG is off", () => {
    const got = joinInstances(
      "n1",
      parseGpus("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0d0831da-0c98-2717-6446-8acd91d39b65)\n"),
      parseTable(cap("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mig-disabled.txt")),
      null,
    );
    assert.deepEqual(
      got.map((i) => [i.uuid, i.profile, i.placement]),
      [["GPU-0d0831da-0c98-2717-6446-8acd91d39b65", "whole-gpu", null]],
    );
  });

  it("reads GI/CI from the old MIG-GPU-…/gi/ci form of R450", () => {
    const listing = parseGpus(cap("nvidia-smi_-L_A100-SXM4-40GB_450.80.02_mixed.txt"));
    const got = joinInstances(
      "n1",
      listing,
      { driverVersion: null, cudaVersion: null, gpus: [], migDevices: [], processes: [] },
      null,
    );
    assert.ok(got.length > 0);
    assert.ok(
      got.every(
        (i) =>
          i.uuid.startsWith("MIG-GPU-") && i.gpuInstanceId !== null && i.computeInstanceId !== null,
      ),
    );
  });
});
