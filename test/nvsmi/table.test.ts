// The default nvidia-smi table from R450 to R580: banner, GPU rows, MIG devices, processes.

import assert from "node:assert/strict";
import { parseTable } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, dropLine, editLine, keepLines, lineOf } from "./helpers.js";

const R580_MIXED = readCapture("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mixed.txt");
const R580_OFF = readCapture("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mig-disabled.txt");
const R515_SHARED = readCapture("nvidia-smi_default-table_A100-PCIe-80GB_515.86.01_2ci-in-gi1.txt");
const R450 = readCapture(
  "nvidia-smi_default-table_A100-SXM4-40GB_450.80.02_mig-enabled-no-devices.txt",
);
const R550 = readCapture("nvidia-smi_default-table_H100-NVL-94GB_550.127.06_7x1g.12gb.txt");
const CONTAINER = readCapture(
  "nvidia-smi_default-table_H100-PCIe-80GB_525.125.06_inside-container-1g.10gb.txt",
);
const GUIDE_3CI = readCapture(
  "nvidia-smi_default-table-mig-section_A100-SXM4-40GB_guide_3ci-in-1gi.txt",
);

describe("nvsmi table", () => {
  it("reads the R580 layout: banner, GPU row, MIG devices and processes with GI/CI", () => {
    const t = parseTable(R580_MIXED);
    assert.equal(t.driverVersion, "580.173.02");
    assert.equal(t.cudaVersion, "13.0");
    assert.deepEqual(t.gpus, [
      {
        index: 0,
        name: "NVIDIA H100 80GB HBM3",
        busId: "00000000:00:09.0",
        persistence: "On",
        migMode: "Enabled",
        memoryUsedMiB: 12657,
        memoryTotalMiB: 81559,
      },
    ]);
    assert.deepEqual(t.migDevices[0], {
      gpu: 0,
      gpuInstanceId: 1,
      computeInstanceId: 0,
      device: 0,
      memoryUsedMiB: 12627,
      memoryTotalMiB: 40448,
      sm: 16,
    });
    assert.deepEqual(
      t.migDevices.map((d) => [d.gpuInstanceId, d.memoryTotalMiB]),
      [
        [1, 40448],
        [11, 9984],
        [13, 9984],
      ],
    );
    assert.deepEqual(t.processes[2], {
      gpu: 0,
      gpuInstanceId: 1,
      computeInstanceId: 0,
      pid: 23808,
      type: "C",
      name: "/tmp/ghost",
      memoryMiB: 4188,
    });
  });

  it("reads MIG off: Disabled, and N/A GI/CI on processes", () => {
    const t = parseTable(R580_OFF);
    assert.equal(t.gpus[0]!.migMode, "Disabled");
    assert.deepEqual(t.migDevices, []);
    assert.deepEqual(t.processes, [
      {
        gpu: 0,
        gpuInstanceId: null,
        computeInstanceId: null,
        pid: 4559,
        type: "C",
        name: "/tmp/loadgen",
        memoryMiB: 4618,
      },
    ]);
  });

  it("reads the 79-column R450 and R515 layouts and the R550 one", () => {
    const r450 = parseTable(R450);
    assert.deepEqual(
      [r450.driverVersion, r450.gpus[0]!.name, r450.gpus[0]!.memoryTotalMiB, r450.gpus[0]!.migMode],
      ["450.80.02", "A100-SXM4-40GB", 40537, "Enabled"],
    );
    assert.deepEqual(r450.migDevices, []);
    const r550 = parseTable(R550);
    assert.equal(r550.cudaVersion, null, "CUDA Version: N/A on a vGPU host");
    assert.deepEqual(
      r550.migDevices.map((d) => d.gpuInstanceId),
      [7, 8, 9, 10, 11, 12, 13],
    );
    assert.ok(r550.migDevices.every((d) => d.memoryTotalMiB === 10880 && d.sm === 16));
  });

  it("gives CIs that share a GI the GI's memory figures", () => {
    const t = parseTable(R515_SHARED);
    assert.equal(t.gpus[0]!.name, "NVIDIA A100 80G...");
    assert.deepEqual(
      t.migDevices.map((d) => [d.gpuInstanceId, d.computeInstanceId, d.device, d.memoryTotalMiB]),
      [
        [1, 0, 0, 40192],
        [1, 1, 1, 40192],
      ],
    );
    const guide = parseTable(GUIDE_3CI);
    assert.equal(guide.driverVersion, null, "the guide crops the table to MIG devices");
    assert.deepEqual(
      guide.migDevices.map((d) => [d.computeInstanceId, d.memoryUsedMiB, d.sm]),
      [
        [0, 11, 14],
        [1, 11, 14],
        [2, 11, 14],
      ],
    );
  });

  it("reads N/A memory inside a container", () => {
    const t = parseTable(CONTAINER);
    assert.deepEqual([t.gpus[0]!.memoryUsedMiB, t.gpus[0]!.memoryTotalMiB], [null, null]);
    assert.deepEqual(
      t.migDevices.map((d) => [d.gpuInstanceId, d.memoryTotalMiB, d.sm]),
      [[8, 9856, 14]],
    );
  });

  it("reads several GPUs", () => {
    const first = lineOf(R580_OFF, "|   0  NVIDIA H100");
    const lines = R580_OFF.split("\n");
    const second = lines
      .slice(first - 1, first + 3)
      .map((l, i) => (i === 0 ? l.replace("|   0  ", "|   1  ").replace("00:09.0", "00:0A.0") : l));
    lines.splice(first + 3, 0, ...second);
    const t = parseTable(lines.join("\n"));
    assert.deepEqual(
      t.gpus.map((g) => [g.index, g.busId]),
      [
        [0, "00000000:00:09.0"],
        [1, "00000000:00:0A.0"],
      ],
    );
  });

  it("names a GPU record that lost a row", () => {
    const no = lineOf(R580_MIXED, "|   0  NVIDIA H100");
    // Without its `MIG M.` row the record ends at the border that follows.
    assertParseError(() => parseTable(dropLine(R580_MIXED, no + 2)), "table", no + 2);
  });

  it("names a MIG device row cut in the middle and output that stops inside a record", () => {
    const no = lineOf(R580_MIXED, "|  0   11   0   1  |");
    assertParseError(
      () => parseTable(editLine(R580_MIXED, no, (l) => l.slice(0, 50))),
      "table",
      no,
    );
    assertParseError(() => parseTable(keepLines(R580_MIXED, no + 1)), "table", no + 2);
  });

  it("names a garbled process row", () => {
    const no = lineOf(R580_MIXED, "23806");
    assertParseError(
      () => parseTable(editLine(R580_MIXED, no, (l) => l.replace("4188MiB", "41##MiB"))),
      "table",
      no,
    );
  });
});
