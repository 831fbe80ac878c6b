// The product's parsers and MIG catalogue against outputs captured on a real H200 (driver
// 580.159.04, MIG disabled, no container toolkit) lent to this project on 4 December 2026:
// scripts/gpu-smoke.sh's runs of the built-in workloads built with the machine's nvcc 13.0, the
// kernel log of their faults, and the read-only nvidia-smi queries discovery makes. Each file in
// fixtures/captures names its source on its first line.
import assert from "node:assert/strict";
import { busKey, xidsIn } from "../../src/chaos/probes.js";
import { catalogFor } from "../../src/mig/catalog/catalog.js";
import { parseLgip } from "../../src/nvsmi/lgip.js";
import { parseQMig } from "../../src/nvsmi/qmig.js";
import { parseQueryGpu } from "../../src/nvsmi/query.js";
import { parseTable } from "../../src/nvsmi/table.js";
import { parseBuiltinOutput } from "../../src/workloads/parsers/builtin.js";
import { parseCudaErrors } from "../../src/workloads/parsers/cuda-errors.js";
import { readCapture } from "../workloads/captures.js";

const H200 = "H200_580.159.04";
const UUID = "GPU-b40a88a5-b3fc-fce3-bd54-f2d762962c4d";
const out = (name: string) => parseBuiltinOutput(readCapture(`slicecheck-${name}.txt`));
const errs = (name: string) => parseCudaErrors(readCapture(`slicecheck-${name}.txt`));

describe("a real H200 (driver 580.159.04): parsers and catalogue on its captured outputs", () => {
  it("the built-in catalogue's H200 profiles at this driver are exactly what its -lgip lists", () => {
    const live = parseLgip(readCapture(`nvidia-smi_mig-lgip_${H200}_mig-disabled.txt`)).gpus[0]!;
    const cat = catalogFor("H200", "580.159.04").giProfiles;
    const row = (p: { name: string; id: number; sm: number; ce: number; jpeg: number }) =>
      [p.name, p.id, p.sm, p.ce, p.jpeg].join(" ");
    assert.deepEqual(live.profiles.map(row), cat.map(row));
    assert.deepEqual(
      live.profiles.map((p) => [p.name, p.total, p.memoryGiB.toFixed(2), p.ofa]),
      cat.map((p) => [p.name, p.instances, p.memoryGiB, p.ofa]),
    );
    // The memory sizes that changed after the 2024 driver (the catalogue puts it at R560).
    assert.equal(live.profiles.find((p) => p.name === "7g.141gb")?.memoryGiB, 140);
  });

  it("discovery's query, the default table and -q: the GPU, its driver, CUDA 13.0, MIG disabled", () => {
    const q = parseQueryGpu(readCapture(`nvidia-smi_query-gpu-discovery_${H200}.txt`)).rows[0]!;
    assert.equal(q.uuid, UUID);
    assert.equal(q.name, "NVIDIA H200");
    assert.equal(q.driver_version, "580.159.04");
    assert.equal(q["mig.mode.current"], "Disabled");
    const t = parseTable(readCapture(`nvidia-smi_default-table_${H200}_mig-disabled.txt`));
    assert.equal(t.driverVersion, "580.159.04");
    assert.equal(t.cudaVersion, "13.0");
    assert.deepEqual(
      t.gpus.map((g) => [g.name, g.busId, g.migMode, g.memoryTotalMiB]),
      [["NVIDIA H200", "00000000:00:06.0", "Disabled", 143771]],
    );
    assert.deepEqual(t.processes, []);
    const m = parseQMig(readCapture(`nvidia-smi_-q_${H200}_mig-disabled.txt`)).gpus[0]!;
    assert.equal(m.uuid, UUID);
    assert.equal(m.migModeCurrent, "Disabled");
  });

  it("the stress built with nvcc 13.0: ten interval lines and the final figure; a planted error is counted", () => {
    const s = out(`stress_${H200}_10s`);
    assert.equal(s.stress.length, 10);
    assert.ok(s.stress.every((x) => x.errors === 0 && x.tflops > 60));
    assert.deepEqual(s.stressFinal, { tflops: 63.65, errors: 0, iterations: 400 });
    assert.equal(out(`stress_${H200}_plant-error`).stressFinal?.errors, 1);
  });

  it("memhog: a half share checked, an OOM when it takes everything, and CUDA's OOM line past the card", () => {
    const half = out(`memhog_${H200}_fraction-0.5`);
    assert.equal(half.memhog?.oom, false);
    assert.deepEqual(half.memhogChecks.at(-1), { bytes: 1024 ** 3, ok: true });
    const all = out(`memhog_${H200}_until-oom`);
    assert.deepEqual(
      [all.memhog?.oom, all.memhog?.allocatedBytes, all.memhogChecks.map((c) => c.ok)],
      [true, 149554200576, [false]],
    );
    assert.deepEqual(
      errs(`memhog_${H200}_over-target`).map((e) => e.kind),
      ["oom"],
    );
    assert.equal(out(`memhog_${H200}_after-faults`).memhogChecks.at(-1)?.ok, true);
  });

  it("the crasher's faults read as their CUDA errors; its hang and SIGKILL arm and leave no error", () => {
    assert.deepEqual(
      errs(`crasher_${H200}_illegal-address`).map((e) => e.kind),
      ["illegal-address"],
    );
    assert.deepEqual(
      errs(`crasher_${H200}_trap`).map((e) => e.kind),
      ["launch-failure"],
    );
    for (const [name, mode] of [
      ["hang-killed-124", "hang"],
      ["sigkill-137", "sigkill"],
    ] as const) {
      assert.deepEqual(out(`crasher_${H200}_${name}`).crasher, { mode });
      assert.deepEqual(errs(`crasher_${H200}_${name}`), []);
    }
  });

  it("the kernel log's Xid 31 and 43 are the crasher's, on this GPU's bus; another bus sees none", () => {
    const lines = readCapture("xid_31_43_H200-580.159.04_crasher-dmesg.txt").split("\n");
    const bus = busKey("00000000:00:06.0");
    const seen = xidsIn(lines, bus).map((x) => [x.xid, x.name, x.pid]);
    assert.deepEqual(seen, [
      [31, "crasher", 699],
      [43, "crasher", 713],
    ]);
    assert.deepEqual(xidsIn(lines, busKey("00000000:3B:00.0")), []);
  });
});
