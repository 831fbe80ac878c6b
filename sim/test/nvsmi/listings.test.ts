// `mig -lgip/-lgipp/-lgi/-lci/-lcip` against real captures, byte for byte. Each node is brought
// into the capture's state with the simulator's own commands where the capture's session shows
// how it got there, and by writing the GIs directly where it does not (or where that driver
// numbered GIs differently from the rule the simulator follows, see alloc.ts).

import assert from "node:assert/strict";
import { capture, cleanupNodes, localCapture, SimNode } from "./helpers.js";
import { a30Three, h100Mixed, h100TwoSmall, sevenSmall, twoThreeG } from "./scenarios.js";

after(cleanupNodes);

function h100_580(migEnabled = true): SimNode {
  return new SimNode({ product: "H100-80GB", driver: "580.173.02", migEnabled });
}

async function expectOutput(n: SimNode, args: string, expected: string, uid = 0) {
  const r = await n.run(args, uid);
  assert.equal(r.out, expected);
  assert.equal(r.err, "");
  return r;
}

describe("simulated nvidia-smi mig -lgip", () => {
  const cases: [string, string, string, boolean][] = [
    ["nvidia-smi_mig-lgip_A100-PCIe-40GB_pre-R525.txt", "NVIDIA A100-PCIE-40GB", "515.86.01", true],
    [
      "nvidia-smi_mig-lgip_A100-PCIe-80GB_515.86.01.txt",
      "NVIDIA A100 80GB PCIe",
      "515.86.01",
      true,
    ],
    ["nvidia-smi_mig-lgip_A100-SXM4-40GB_unknown-R470plus.txt", "A100-40GB", "525.125.06", true],
    ["nvidia-smi_mig-lgip_A30-24GB_535.183.01.txt", "A30", "535.183.01", true],
    [
      "nvidia-smi_mig-lgip_H100-80GB-HBM3_580.173.02_mig-disabled.txt",
      "H100-80GB",
      "580.173.02",
      false,
    ],
    ["nvidia-smi_mig-lgip_H100-NVL-94GB_550.127.06.txt", "H100-NVL", "550.127.06", true],
    ["nvidia-smi_mig-lgip_H100-PCIe-80GB_525.125.06.txt", "H100-PCIE", "525.125.06", true],
    [
      "nvidia-smi_mig-lgip_RTX-PRO-6000-Blackwell-Server_610.43.02.txt",
      "NVIDIA RTX PRO 6000 Blackwell Server Edition",
      "610.43.02",
      true,
    ],
    [
      "nvidia-smi_mig-lgip_RTX-PRO-6000-Blackwell-Max-Q_580.105.08.txt",
      "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
      "580.105.08",
      true,
    ],
  ];
  for (const [file, product, driver, migEnabled] of cases) {
    it(`prints ${file} for an idle ${product} on ${driver}`, async () => {
      const n = new SimNode({ product, driver, migEnabled });
      const r = await expectOutput(n, "mig -lgip", capture(file));
      assert.equal(r.code, 0);
    });
  }

  it("prints the 76-column R450 table (no +me, no 1g.10gb)", async () => {
    const n = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    await expectOutput(n, "mig -lgip", localCapture("nvidia-smi_mig-lgip_A100-PCIe-40GB_R450.txt"));
  });

  it("counts free instances next to existing GIs (H100 and H200, 580.173.02)", async () => {
    await expectOutput(
      await h100TwoSmall(),
      "mig -lgip",
      capture("nvidia-smi_mig-lgip_H100-80GB-HBM3_580.173.02_2x1g.10gb-in-use.txt"),
    );
    await expectOutput(
      await h100Mixed(),
      "mig -lgip",
      capture("nvidia-smi_mig-lgip_H100-80GB-HBM3_580.173.02_mixed-in-use.txt"),
    );
    const h200 = new SimNode({ product: "H200", driver: "580.173.02", migEnabled: true });
    await h200.setup("mig -cgi 19,19 -C");
    await expectOutput(
      h200,
      "mig -lgip",
      capture("nvidia-smi_mig-lgip_H200-141GB_580.173.02_2x1g.18gb-in-use.txt"),
    );
  });

  it("refuses to list profiles with MIG disabled before R575 (GPU Operator: 535 cannot)", async () => {
    const n = new SimNode({ product: "A30", driver: "535.183.01" });
    const r = await n.run("mig -lgip");
    assert.equal(r.out, "No MIG-enabled devices found.\n");
    assert.notEqual(r.code, 0);
  });
});

describe("simulated nvidia-smi mig -lgipp", () => {
  const cases: [string, string, string][] = [
    ["nvidia-smi_mig-lgipp_A100-PCIe-40GB_pre-R525.txt", "A100-40GB", "515.86.01"],
    ["nvidia-smi_mig-lgipp_A100-SXM4-40GB_guide.txt", "A100-40GB", "525.125.06"],
    ["nvidia-smi_mig-lgipp_H100-80GB-HBM3_unknown.txt", "H100-80GB", "550.127.06"],
    ["nvidia-smi_mig-lgipp_H100-PCIe-80GB_525.125.06.txt", "H100-PCIE", "525.125.06"],
    [
      "nvidia-smi_mig-lgipp_RTX-PRO-6000-Blackwell-Server_610.43.02.txt",
      "RTX-PRO-6000",
      "610.43.02",
    ],
  ];
  for (const [file, product, driver] of cases) {
    it(`prints ${file}`, async () => {
      const n = new SimNode({ product, driver, migEnabled: true });
      await expectOutput(n, "mig -lgipp", capture(file));
    });
  }
});

describe("simulated nvidia-smi mig -lgi", () => {
  it("lists GIs created by the capture's own commands", async () => {
    await expectOutput(
      await h100TwoSmall(),
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_2x1g.10gb.txt"),
    );
    await expectOutput(
      await h100Mixed(),
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mixed.txt"),
    );
    await expectOutput(
      await sevenSmall("H100-80GB", "550.127.06"),
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_H100-80GB-HBM3_unknown_7x1g.10gb.txt"),
    );
    await expectOutput(
      await a30Three(),
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_A30-24GB_535.183.01_3gi.txt"),
    );
  });

  it("lists four 1g.6gb on a pre-R525 A30 and the R450 54-column layout", async () => {
    const a30 = new SimNode({ product: "A30", driver: "515.86.01", migEnabled: true });
    await a30.setup("mig -cgi 14,14,14,14");
    await expectOutput(
      a30,
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_A30-24GB_pre-R525_4x1g.6gb.txt"),
    );
    const a100 = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    await a100.setup("mig -cgi 14,19,19,19,19,19");
    await expectOutput(
      a100,
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_A100-SXM4-40GB_guide_2-1-1-1-1-1.txt"),
    );
  });

  it("prints GIs numbered as those drivers numbered them", async () => {
    const pre525 = new SimNode({ product: "A100-40GB", driver: "515.86.01", migEnabled: true });
    twoThreeG(pre525, 1, 2);
    await expectOutput(
      pre525,
      "mig -i 0 -lgi",
      capture("nvidia-smi_mig-lgi_A100-PCIe-40GB_pre-R525_2x3g.20gb.txt"),
    );
    const r515 = new SimNode({ product: "A100-80GB", driver: "515.86.01", migEnabled: true });
    twoThreeG(r515, 2, 1);
    await expectOutput(
      r515,
      "mig -i 0 -lgi",
      capture("nvidia-smi_mig-lgi_A100-PCIe-80GB_515.86.01_2x3g.40gb.txt"),
    );
    const r450 = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    twoThreeG(r450, 2, 1);
    await expectOutput(
      r450,
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_A100-SXM4-40GB_unknown_2x3g.20gb.txt"),
    );
  });

  it("says why there is nothing to list", async () => {
    const empty = new SimNode({ product: "A30", driver: "535.183.01", migEnabled: true });
    const r = await expectOutput(
      empty,
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_A30-24GB_535.183.01_empty.txt"),
    );
    assert.equal(r.code, 6);
    const off = h100_580(false);
    await expectOutput(
      off,
      "mig -lgi",
      capture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mig-disabled.txt"),
    );
  });
});

describe("simulated nvidia-smi mig -lci", () => {
  it("lists CIs in -lgi order with the Placement column (R470+)", async () => {
    await expectOutput(
      await h100TwoSmall(),
      "mig -lci",
      capture("nvidia-smi_mig-lci_H100-80GB-HBM3_580.173.02_2x1g.10gb.txt"),
    );
    await expectOutput(
      await sevenSmall("H100-80GB", "550.127.06"),
      "mig -lci",
      capture("nvidia-smi_mig-lci_H100-80GB-HBM3_unknown_7x1g.10gb.txt"),
    );
    const a100 = new SimNode({
      product: "NVIDIA A100 80GB PCIe",
      driver: "515.86.01",
      migEnabled: true,
    });
    twoThreeG(a100, 2, 1);
    await a100.setup("mig -cci 0,0 -gi 1");
    await expectOutput(
      a100,
      "mig -i 0 -gi 1 -lci",
      capture("nvidia-smi_mig-lci-gi1_A100-PCIe-80GB_515.86.01_2x1c.txt"),
    );
  });

  it("prints the R450 layout without Placement", async () => {
    const n = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    twoThreeG(n, 2, 1);
    await n.setup("mig -cci 0,0,0 -gi 1");
    await expectOutput(
      n,
      "mig -lci -gi 1",
      capture("nvidia-smi_mig-lci-gi1_A100-SXM4-40GB_guide_3x1c.txt"),
    );
  });

  it("prints the mixed H100 listing once the 1c CI sits where the capture shows it", async () => {
    const n = await h100Mixed();
    // The capture's lone 1c CI is at 2:1; the simulator places a new CI at the lowest free
    // start (as 515.86.01 did), so the recorded placement is written in.
    n.gpu((g) => {
      const ci = g.gis.find((x) => x.id === 1)?.cis[0];
      assert.ok(ci);
      ci.start = 2;
    });
    await expectOutput(
      n,
      "mig -lci",
      capture("nvidia-smi_mig-lci_H100-80GB-HBM3_580.173.02_mixed.txt"),
    );
  });

  it("refuses without MIG, and without the mig/monitor capability", async () => {
    await expectOutput(
      h100_580(false),
      "mig -lci",
      capture("nvidia-smi_mig-lci_H100-80GB-HBM3_580.173.02_mig-disabled.txt"),
    );
    const n = await h100TwoSmall();
    n.edit((s) => {
      s.nonRootCaps = { migMonitor: false, migConfig: false };
    });
    const r = await expectOutput(
      n,
      "mig -lci",
      capture("nvidia-smi_mig-lci_unknown_unknown_error-insufficient-permissions.txt"),
      1000,
    );
    assert.equal(r.code, 4);
    const root = await n.run("mig -lci", 0);
    assert.equal(root.code, 0);
  });
});

describe("simulated nvidia-smi mig -lcip", () => {
  it("lists CI profiles of an empty 3g GI (515.86.01 and pre-R525)", async () => {
    const a100 = new SimNode({
      product: "NVIDIA A100 80GB PCIe",
      driver: "515.86.01",
      migEnabled: true,
    });
    twoThreeG(a100, 2, 1);
    await expectOutput(
      a100,
      "mig -i 0 -gi 1 -lcip",
      capture("nvidia-smi_mig-lcip-gi1_A100-PCIe-80GB_515.86.01_3g.40gb.txt"),
    );
    const pre = new SimNode({ product: "A100-40GB", driver: "515.86.01", migEnabled: true });
    twoThreeG(pre, 1, 2);
    await expectOutput(
      pre,
      "mig -i 0 -lcip -gi 2",
      capture("nvidia-smi_mig-lcip-gi2_A100-PCIe-40GB_pre-R525_3g.20gb.txt"),
    );
  });

  it("counts what the existing default CI leaves free (A30 535)", async () => {
    const n = await a30Three();
    await expectOutput(
      n,
      "mig -lcip -gi 2",
      capture("nvidia-smi_mig-lcip-gi2_A30-24GB_535.183.01_2g.12gb.txt"),
    );
    await expectOutput(
      n,
      "mig -lcip -gi 3",
      localCapture("nvidia-smi_mig-lcip-gi3_A30-24GB_535.183.01_1g.6gb.txt"),
    );
  });
});
