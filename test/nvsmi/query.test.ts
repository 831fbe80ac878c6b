// `--query-gpu` and `--query-compute-apps` CSV, with and without header and units.

import assert from "node:assert/strict";
import { parseComputeApps, parseQueryGpu } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, editLine, lineOf } from "./helpers.js";

const MIG_MODES = readCapture("nvidia-smi_query-gpu-csv_4gpu_unknown_mig-mode-current-pending.txt");
const BUS_AND_MODE = readCapture(
  "nvidia-smi_query-gpu-csv_H100-PCIe-80GB_525.125.06_mig-mode-current.txt",
);

describe("nvsmi query (--query-gpu)", () => {
  it("takes the field names from the header", () => {
    const { rows } = parseQueryGpu(MIG_MODES);
    assert.equal(rows.length, 4);
    assert.deepEqual(rows[0], {
      uuid: "GPU-ec845691-fb46-e16d-abfb-b135308cb39f",
      "mig.mode.current": "Enabled",
      "mig.mode.pending": "Enabled",
    });
    assert.deepEqual(
      rows.map((r) => r["mig.mode.current"]),
      ["Enabled", "Disabled", "Disabled", "Disabled"],
    );
    assert.deepEqual(parseQueryGpu(BUS_AND_MODE).rows, [
      { "pci.bus_id": "00000000:01:00.0", "mig.mode.current": "Enabled" },
    ]);
  });

  it("uses the given field list with noheader, and recognises a header when there is one", () => {
    const noheader = MIG_MODES.split("\n").slice(2).join("\n");
    const fields = ["uuid", "mig.mode.current", "mig.mode.pending"];
    assert.deepEqual(parseQueryGpu(noheader, fields), parseQueryGpu(MIG_MODES));
    assert.deepEqual(parseQueryGpu(MIG_MODES, fields), parseQueryGpu(MIG_MODES));
  });

  it("turns numbers into numbers, units or not, and [N/A] / [Not Supported] into null", () => {
    // Built from the documented csv forms; values as an H100 with MIG on reports them.
    const nounits = [
      "index, name, memory.total [MiB], utilization.gpu [%], mig.mode.current, serial",
      "0, NVIDIA H100 80GB HBM3, 81559, [N/A], Enabled, 1650124014249",
      "1, NVIDIA H100 80GB HBM3, 81559, [Not Supported], Disabled, 1650124014250",
    ].join("\n");
    assert.deepEqual(parseQueryGpu(nounits).rows[0], {
      index: 0,
      name: "NVIDIA H100 80GB HBM3",
      "memory.total": 81559,
      "utilization.gpu": null,
      "mig.mode.current": "Enabled",
      serial: "1650124014249",
    });
    assert.equal(parseQueryGpu(nounits).rows[1]!["utilization.gpu"], null);
    const units = "memory.total [MiB], memory.used [MiB]\n81559 MiB, 4225 MiB\n";
    assert.deepEqual(parseQueryGpu(units).rows, [{ "memory.total": 81559, "memory.used": 4225 }]);
  });

  it("needs a header or a field list", () => {
    assertParseError(() => parseQueryGpu("Enabled, Disabled\n"), "query", 1);
  });

  it("names a row cut short", () => {
    const no = lineOf(MIG_MODES, "GPU-b4199570");
    const cut = editLine(MIG_MODES, no, (l) => l.slice(0, l.lastIndexOf(",")));
    assertParseError(() => parseQueryGpu(cut), "query", no);
  });
});

describe("nvsmi apps (--query-compute-apps)", () => {
  // The processes of the H100 580.173.02 mixed capture, as the csv query prints them.
  const APPS = [
    "$ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,nounits",
    "pid, process_name, used_gpu_memory [MiB]",
    "23804, /tmp/loadgen, 4188",
    "23808, /tmp/ghost, [N/A]",
    "",
  ].join("\n");

  it("keys rows by the fields as given, even where the header differs", () => {
    assert.deepEqual(parseComputeApps(APPS, ["pid", "process_name", "used_memory"]).apps, [
      { pid: 23804, process_name: "/tmp/loadgen", used_memory: 4188 },
      { pid: 23808, process_name: "/tmp/ghost", used_memory: null },
    ]);
    assert.deepEqual(parseComputeApps(APPS).apps[0], {
      pid: 23804,
      process_name: "/tmp/loadgen",
      used_gpu_memory: 4188,
    });
  });

  it("reads an empty process list and names a garbled row", () => {
    assert.deepEqual(parseComputeApps("pid, process_name, used_gpu_memory [MiB]\n").apps, []);
    assertParseError(() => parseComputeApps(`${APPS}23810, /tmp/x\n`), "apps", 5);
  });
});
