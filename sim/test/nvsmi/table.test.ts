// The default `nvidia-smi` table against real captures of each layout generation (79 columns
// R450-R525, 89 R535, 91 R550, 91 R580). What the capture's hardware measured (temperature,
// power, memory in use, bus ID, its processes) is written into the node first; everything else
// (layout, names, totals, SMs, engines, BAR1, GI/CI/device numbering) is the simulator's.

import assert from "node:assert/strict";
import type { SimProcess } from "../../src/nvsmi/state.js";
import {
  at,
  capture,
  cleanupNodes,
  localCapture,
  SimNode,
  trimRight,
  withoutFirstLine,
} from "./helpers.js";
import { a30Three, h100Mixed, h100TwoSmall, sevenSmall, twoThreeG } from "./scenarios.js";

after(cleanupNodes);

interface Measured {
  bus: string;
  tempC: number;
  powerW: number;
  persistence?: boolean;
  util?: number;
  usedMiB?: number;
  giUsed?: [gi: number, mib: number][];
  procs?: SimProcess[];
}

function measured(n: SimNode, m: Measured): void {
  n.gpu((g) => {
    g.pciBusId = m.bus;
    g.persistenceMode = m.persistence ?? true;
    g.telemetry = {
      ...g.telemetry,
      tempC: m.tempC,
      powerDrawW: m.powerW,
      gpuUtilPercent: m.util ?? 0,
      ...(m.usedMiB === undefined ? {} : { memoryUsedMiB: m.usedMiB }),
    };
    for (const [id, mib] of m.giUsed ?? []) {
      const gi = g.gis.find((x) => x.id === id);
      if (!gi) throw new Error(`no GI ${id}`);
      gi.memoryUsedMiB = mib;
    }
    g.processes = m.procs ?? [];
  });
}

const proc = (pid: number, name: string, gi: number | null, mib: number): SimProcess => ({
  pid,
  name,
  type: "C",
  gi,
  ci: gi === null ? null : 0,
  usedMiB: mib,
});

async function table(n: SimNode): Promise<string> {
  const r = await n.run("");
  assert.equal(r.code, 0);
  return r.out;
}

describe("simulated nvidia-smi (default table)", () => {
  it("R580 H100, MIG on: two 1g.10gb, a process in GI 11 (PRICKLE)", async () => {
    const n = await h100TwoSmall();
    n.now = at(2026, 7, 29, 18, 17, 43);
    measured(n, {
      bus: "00000000:00:09.0",
      tempC: 58,
      powerW: 171.2,
      giUsed: [
        [11, 4210],
        [13, 15],
      ],
      procs: [proc(10385, "/tmp/loadgen", 11, 4188)],
    });
    assert.equal(
      await table(n),
      capture("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_2x1g.10gb.txt"),
    );
  });

  it("R580 H100, MIG on: 3g.40gb with one 1c CI (16 SMs) next to 1g.10gb and 1g.10gb+me", async () => {
    const n = await h100Mixed();
    n.now = at(2026, 7, 29, 18, 52, 50);
    measured(n, {
      bus: "00000000:00:09.0",
      tempC: 62,
      powerW: 237.84,
      giUsed: [
        [1, 12627],
        [11, 15],
        [13, 15],
      ],
      procs: [
        proc(23808, "/tmp/ghost", 1, 4188),
        proc(23804, "/tmp/loadgen", 1, 4188),
        proc(23806, "/tmp/loadgen", 1, 4188),
      ],
    });
    assert.equal(
      await table(n),
      capture("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mixed.txt"),
    );
  });

  it("R580 H100, MIG off: no MIG section, N/A for GI and CI of a process", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    n.now = at(2026, 7, 29, 18, 5, 46);
    measured(n, {
      bus: "00000000:00:09.0",
      tempC: 66,
      powerW: 355.57,
      util: 100,
      usedMiB: 4627,
      procs: [proc(4559, "/tmp/loadgen", null, 4618)],
    });
    assert.equal(
      await table(n),
      capture("nvidia-smi_default-table_H100-80GB-HBM3_580.173.02_mig-disabled.txt"),
    );
  });

  it("R580 H200: BAR1 share of 14809 MiB per slice (PRICKLE)", async () => {
    const n = new SimNode({ product: "H200", driver: "580.173.02", migEnabled: true });
    await n.setup("mig -cgi 19,19 -C");
    n.now = at(2026, 7, 26, 5, 42, 17);
    measured(n, {
      bus: "00000000:83:00.0",
      tempC: 38,
      powerW: 123.31,
      giUsed: [
        [11, 624],
        [13, 15],
      ],
      procs: [proc(12648, "/tmp/prickle-gpu-spin", 11, 602)],
    });
    assert.equal(
      await table(n),
      localCapture("nvidia-smi_default-table_H200-141GB_580.173.02_2x1g.18gb.txt"),
    );
  });

  it("R580.65 H100 GUIDE example: two 3g.40gb (cropped by the guide before Processes)", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.65.06", migEnabled: true });
    await n.setup("mig -cgi 9,9 -C");
    measured(n, {
      bus: "00000000:42:00.0",
      tempC: 30,
      powerW: 141,
      persistence: false,
      usedMiB: 87,
      giUsed: [
        [1, 44],
        [2, 44],
      ],
    });
    const expected = capture(
      "nvidia-smi_default-table_H100-80GB-HBM3_580.65.06_guide_2x3g.40gb.txt",
    );
    const ours = withoutFirstLine(await table(n));
    assert.ok(ours.startsWith(expected), ours);
  });

  it("R550 H100 NVL vGPU host: 91 columns, `|` under the banner, a 89-space line, CUDA N/A", async () => {
    const n = await sevenSmall("H100-NVL", "550.127.06");
    n.edit((s) => {
      s.cuda = "N/A";
    });
    n.now = at(2026, 3, 6, 10, 55, 12);
    measured(n, {
      bus: "00000000:98:00.0",
      tempC: 45,
      powerW: 65,
      usedMiB: 88,
      giUsed: [7, 8, 9, 10, 11, 12, 13].map((gi): [number, number] => [gi, 13]),
    });
    assert.equal(
      await table(n),
      capture("nvidia-smi_default-table_H100-NVL-94GB_550.127.06_7x1g.12gb.txt"),
    );
  });

  it("R535 A30: 89 columns (IDX-25510043945)", async () => {
    const n = await a30Three();
    n.now = at(2024, 11, 21, 7, 12, 15);
    // GI memory in use is the simulator's idle reservation (12.5 MiB per slice): 25, 12, 12.
    measured(n, {
      bus: "00000000:0B:00.0",
      tempC: 47,
      powerW: 32,
      persistence: false,
      usedMiB: 50,
    });
    assert.equal(
      await table(n),
      localCapture("nvidia-smi_default-table_A30-24GB_535.183.01_3dev.txt"),
    );
  });

  it("R515 A100 80GB PCIe: two CIs share their GI's memory cell (timestamp cropped)", async () => {
    const n = new SimNode({
      product: "NVIDIA A100 80GB PCIe",
      driver: "515.86.01",
      migEnabled: true,
    });
    twoThreeG(n, 2, 1);
    await n.setup("mig -cci 0,0 -gi 1");
    measured(n, {
      bus: "00000001:00:00.0",
      tempC: 40,
      powerW: 59,
      persistence: false,
      usedMiB: 38,
      giUsed: [[1, 19]],
    });
    const ours = withoutFirstLine(await table(n));
    assert.equal(ours, capture("nvidia-smi_default-table_A100-PCIe-80GB_515.86.01_2ci-in-gi1.txt"));
  });

  it("R515 A100 80GB PCIe: MIG on, no devices (cropped after the MIG section)", async () => {
    const n = new SimNode({
      product: "NVIDIA A100 80GB PCIe",
      driver: "515.86.01",
      migEnabled: true,
    });
    measured(n, { bus: "00000001:00:00.0", tempC: 37, powerW: 69, persistence: false });
    const expected = capture(
      "nvidia-smi_default-table_A100-PCIe-80GB_515.86.01_mig-enabled-no-devices.txt",
    );
    const ours = withoutFirstLine(await table(n));
    assert.ok(ours.startsWith(expected), ours);
    assert.notEqual(ours, expected);
  });

  it("R450 A100-SXM4-40GB: bare name, 40537 MiB (rst copy without trailing blanks)", async () => {
    const n = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    measured(n, { bus: "00000000:00:04.0", tempC: 32, powerW: 43 });
    const ours = withoutFirstLine(await table(n));
    assert.equal(
      trimRight(ours),
      capture("nvidia-smi_default-table_A100-SXM4-40GB_450.80.02_mig-enabled-no-devices.txt"),
    );
  });

  it("truncates long names and shows pending MIG modes with a star", async () => {
    const n = new SimNode({ product: "NVIDIA A100 80GB PCIe", driver: "515.86.01", gpus: 2 });
    n.gpu((g) => {
      g.mig.pending = true;
      g.processes = [proc(31337, "/opt/conda/envs/training/bin/python3.11", null, 2048)];
    }, 1);
    const out = await table(n);
    assert.match(out, /\| {3}1 {2}NVIDIA A100 80G\.\.\. {2}On {3}\| 00000000:0F:00\.0 Off \|/);
    assert.match(out, /\| +Enabled\* \|\n/);
    assert.match(
      out,
      /\| {4}1 {3}N\/A {2}N\/A {5}31337 {6}C {3}\.\.\.nvs\/training\/bin\/python3\.11 {3}2048MiB \|/,
    );
    for (const line of out.split("\n").slice(1)) {
      if (line.trim() !== "") assert.equal(line.length, 79, line);
    }
  });
});
