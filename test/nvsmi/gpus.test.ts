// `nvidia-smi -L`: both MIG UUID forms, the padded and unpadded device lines, per-CI devices.

import assert from "node:assert/strict";
import { parseGpus } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, editLine, lineOf } from "./helpers.js";

const OLD_FORM = readCapture("nvidia-smi_-L_A100-SXM4-40GB_450.80.02_mixed.txt");
const NEW_FORM = readCapture("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt");

describe("nvsmi gpus (-L)", () => {
  it("reads GI and CI out of the pre-R470 MIG-GPU-<uuid>/<gi>/<ci> form", () => {
    const { gpus } = parseGpus(OLD_FORM);
    assert.equal(gpus[0]!.name, "A100-SXM4-40GB");
    assert.equal(gpus[0]!.uuid, "GPU-4200ccc0-2667-d4cb-9137-f932c716232a");
    assert.deepEqual(gpus[0]!.migDevices, [
      {
        name: "3g.20gb",
        index: 0,
        uuid: "MIG-GPU-4200ccc0-2667-d4cb-9137-f932c716232a/2/0",
        gpuInstanceId: 2,
        computeInstanceId: 0,
      },
      {
        name: "2g.10gb",
        index: 1,
        uuid: "MIG-GPU-4200ccc0-2667-d4cb-9137-f932c716232a/3/0",
        gpuInstanceId: 3,
        computeInstanceId: 0,
      },
      {
        name: "1g.5gb",
        index: 2,
        uuid: "MIG-GPU-4200ccc0-2667-d4cb-9137-f932c716232a/9/0",
        gpuInstanceId: 9,
        computeInstanceId: 0,
      },
    ]);
  });

  it("reads the R470+ MIG-<uuid> form, where GI and CI are unknown", () => {
    const gpu = parseGpus(NEW_FORM).gpus[0]!;
    assert.equal(gpu.name, "NVIDIA H100 80GB HBM3");
    assert.deepEqual(gpu.migDevices[0], {
      name: "1c.3g.40gb",
      index: 0,
      uuid: "MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092",
      gpuInstanceId: null,
      computeInstanceId: null,
    });
    // -L drops the +me suffix: the 1g.10gb+me GI 11 shows as plain 1g.10gb.
    assert.deepEqual(
      gpu.migDevices.map((d) => d.name),
      ["1c.3g.40gb", "1g.10gb", "1g.10gb"],
    );
    const a30 = parseGpus(readCapture("nvidia-smi_-L_A30-24GB_535.183.01_3dev.txt")).gpus[0]!;
    assert.equal(a30.migDevices[2]!.uuid, "MIG-55dcd9bd-e6b1-549a-bcb4-0b0496bfee9c");
  });

  it("lists every CI of a subdivided GI (R570+ per-CI UUIDs) and several GPUs", () => {
    // Reconstructed from the R570 guide description and the R580 line format, not a capture.
    const text = [
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0d0831da-0c98-2717-6446-8acd91d39b65)",
      "  MIG 1c.3g.40gb  Device  0: (UUID: MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092)",
      "  MIG 1c.3g.40gb  Device  1: (UUID: MIG-0aa1e2b3-9a82-5af6-80df-768b9d3ac093)",
      "  MIG 1c.3g.40gb  Device  2: (UUID: MIG-0bb1e2b3-9a82-5af6-80df-768b9d3ac094)",
      "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b4895dbf-9350-2524-a89b-98161ddd9fe4)",
      "",
    ].join("\n");
    const { gpus } = parseGpus(text);
    assert.deepEqual(
      gpus.map((g) => [g.index, g.migDevices.map((d) => d.index)]),
      [
        [0, [0, 1, 2]],
        [1, []],
      ],
    );
    assert.equal(new Set(gpus[0]!.migDevices.map((d) => d.uuid)).size, 3);
  });

  it("names a cut UUID and a device line with no GPU before it", () => {
    const no = lineOf(NEW_FORM, "Device  1:");
    const cut = editLine(NEW_FORM, no, (l) => l.replace(/-[0-9a-f]+\)$/, ""));
    assertParseError(() => parseGpus(cut), "gpus", no);
    const orphan =
      "  MIG 1g.10gb     Device  0: (UUID: MIG-8443519f-66f7-5962-8955-60dba0866f3a)\n";
    assertParseError(() => parseGpus(orphan), "gpus", 1);
    const gpuLine = lineOf(NEW_FORM, "GPU 0:");
    assertParseError(
      () => parseGpus(editLine(NEW_FORM, gpuLine, (l) => l.slice(0, 30))),
      "gpus",
      gpuLine,
    );
  });
});
