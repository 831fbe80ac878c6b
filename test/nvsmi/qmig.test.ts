// `nvidia-smi -q`, MIG Mode block only (the captures are heads of the output).

import assert from "node:assert/strict";
import { parseQMig } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, keepLines, lineOf } from "./helpers.js";

const A100 = readCapture("nvidia-smi_-q_A100-SXM4-40GB_450.203.03_head-to-MIG-Mode.txt");
const H100NVL = readCapture("nvidia-smi_-q_H100-NVL-94GB_550.127.06_head-to-MIG-Mode.txt");

describe("nvsmi -q MIG Mode", () => {
  it("reads versions and the MIG Mode block, not the Driver Model block of the same shape", () => {
    assert.deepEqual(parseQMig(A100), {
      driverVersion: "450.203.03",
      cudaVersion: "11.0",
      gpus: [
        {
          pci: "00000000:07:00.0",
          productName: "A100-SXM4-40GB",
          uuid: "GPU-36c9561a-02ef-5c4d-3733-f0a56c42dc45",
          migModeCurrent: "Disabled",
          migModePending: "Disabled",
        },
      ],
    });
  });

  it("reads a vGPU host with MIG on and CUDA 'Not Found'", () => {
    const q = parseQMig(H100NVL);
    assert.equal(q.cudaVersion, null);
    assert.deepEqual(
      q.gpus.map((g) => [g.pci, g.productName, g.migModeCurrent, g.migModePending]),
      [["00000000:98:00.0", "NVIDIA H100 NVL", "Enabled", "Enabled"]],
    );
  });

  it("names a MIG Mode block cut after its first field", () => {
    const current = lineOf(H100NVL, "Current");
    assertParseError(() => parseQMig(keepLines(H100NVL, current)), "q", current + 1);
  });
});
