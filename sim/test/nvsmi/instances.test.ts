// `mig -cgi/-cci/-dci/-dgi`: the success lines, the GI IDs they hand out and the refusals, against
// the captured sessions, and the state each leaves behind.

import assert from "node:assert/strict";
import { capture, cleanupNodes, SimNode } from "./helpers.js";

after(cleanupNodes);

function node(product: string, driver: string): SimNode {
  return new SimNode({ product, driver, migEnabled: true });
}

async function expectRun(n: SimNode, args: string, expected: string, code = 0, uid = 0) {
  const r = await n.run(args, uid);
  assert.equal(r.out, expected);
  assert.equal(r.code, code);
}

describe("simulated nvidia-smi mig -cgi", () => {
  it("hands out 1g GIs in the observed order 13, 11, 12, 7, 8, 9, 10", async () => {
    const n = node("H100-80GB", "550.127.06");
    await expectRun(
      n,
      "mig -cgi 19,19,19,19,19,19,19 -C",
      capture("nvidia-smi_mig-cgi-C_H100-80GB-HBM3_unknown_7x1g.10gb.txt"),
    );
    const gis = n.state().gpus[0]?.gis ?? [];
    assert.deepEqual(
      gis.map((g) => `${g.id}@${g.start}:${g.size}`),
      ["13@6:1", "11@4:1", "12@5:1", "7@0:1", "8@1:1", "9@2:1", "10@3:1"],
    );
  });

  it("packs mixed requests as the captured sessions did", async () => {
    await expectRun(
      node("H100-PCIE", "525.125.06"),
      "mig -cgi 9,19,19,19 -C",
      capture("nvidia-smi_mig-cgi-C_H100-PCIe-80GB_525.125.06_3g+3x1g.txt"),
    );
    await expectRun(
      node("A100-40GB", "450.80.02"),
      "mig -cgi 14,19,19,19,19,19",
      capture("nvidia-smi_mig-cgi_A100-SXM4-40GB_guide_2-1-1-1-1-1.txt"),
    );
    await expectRun(
      node("A100-40GB", "450.80.02"),
      "mig -cgi 9,9 -C",
      capture("nvidia-smi_mig-cgi-C_A100-SXM4-40GB_unknown_2x3g.20gb.txt"),
    );
  });

  it("continues an A30 session: two 1g.6gb, then the 2g.12gb lands on GI 2", async () => {
    const n = node("A30", "535.183.01");
    await expectRun(
      n,
      "mig -cgi 14 -C",
      capture("nvidia-smi_mig-cgi-C_A30-24GB_535.183.01_1g.6gb.txt"),
    );
    await n.setup("mig -cgi 14 -C");
    await expectRun(
      n,
      "mig -cgi 5 -C",
      capture("nvidia-smi_mig-cgi-C_A30-24GB_535.183.01_2g.12gb.txt"),
    );
  });

  it("accepts IDs, short names, full names and a placement", async () => {
    const n = node("H100-80GB", "580.173.02");
    await n.setup("mig -cgi 3g.40gb");
    assert.equal((await n.run(["mig", "-cgi", "MIG 2g.20gb"])).code, 0);
    const gis = n.state().gpus[0]?.gis ?? [];
    assert.deepEqual(
      gis.map((g) => [g.profileId, g.start]),
      [
        [9, 4],
        [14, 0],
      ],
    );
    const r = await n.run("mig -cgi 19:3");
    assert.equal(
      r.out,
      "Successfully created GPU instance ID 10 on GPU  0 using profile MIG 1g.10gb (ID 19)\n",
    );
    const bad = await n.run("mig -cgi 19:7");
    assert.equal(
      bad.out,
      "Unable to create a GPU instance on GPU  0 using profile 19:7: Invalid Argument\nFailed to create GPU instances: Invalid Argument\n",
    );
    assert.equal(bad.code, 2);
  });

  it("refuses overlap with Insufficient Resources, after creating what fits (the GUIDE's order warning)", async () => {
    const n = node("A100-40GB", "525.125.06");
    await expectRun(
      n,
      "mig -cgi 19,19,14,9",
      capture("nvidia-smi_mig-cgi_A100-SXM4-40GB_guide_error-insufficient-order.txt"),
      255,
    );
    assert.equal(n.state().gpus[0]?.gis.length, 3);
    const explicit = await n.run("mig -cgi 9:4");
    assert.match(
      explicit.out,
      /^Unable to create a GPU instance on GPU {2}0 using profile 9:4: Insufficient Resources\n/,
    );
  });

  it("gives an 8-slice GPU at most seven 1g GIs and one +me GI", async () => {
    const n = node("H100-80GB", "580.173.02");
    await n.setup("mig -cgi 20");
    const second = await n.run("mig -cgi 20");
    assert.equal(
      second.out,
      "Unable to create a GPU instance on GPU  0 using profile 20: Insufficient Resources\nFailed to create GPU instances: Insufficient Resources\n",
    );
    await n.setup("mig -cgi 19,19,19,19,19,19");
    const eighth = await n.run("mig -cgi 1g.10gb");
    assert.match(eighth.out, /using profile 1g\.10gb: Insufficient Resources/);
  });

  it("refuses 4g + 3g together before R510 and allows it after", async () => {
    const old = node("A100-40GB", "470.42.01");
    await old.setup("mig -cgi 5");
    const r = await old.run("mig -cgi 9");
    assert.match(r.out, /using profile 9: Insufficient Resources/);
    const now = node("A100-40GB", "515.86.01");
    await now.setup("mig -cgi 5,9");
    assert.deepEqual(
      now.state().gpus[0]?.gis.map((g) => g.profileId),
      [5, 9],
    );
  });

  it("refuses profiles the board or driver lacks with Invalid Argument, naming them as typed", async () => {
    const pre525 = node("A100-40GB", "515.86.01");
    for (const typed of ["15", "1g.10gb", "7g.80gb", "42"]) {
      const r = await pre525.run(`mig -cgi ${typed}`);
      assert.equal(
        r.out,
        `Unable to create a GPU instance on GPU  0 using profile ${typed}: Invalid Argument\nFailed to create GPU instances: Invalid Argument\n`,
      );
    }
    const r450 = node("A100-40GB", "450.80.02");
    assert.match((await r450.run("mig -cgi 20")).out, /profile 20: Invalid Argument/);
  });

  it("refuses while a client holds the whole GPU (GH200 550.54.15)", async () => {
    const n = node("GH200-96GB", "550.54.15");
    n.gpu((g) => {
      g.processes.push({ pid: 4242, name: "nsys", type: "C", gi: null, ci: null, usedMiB: 0 });
    });
    await expectRun(
      n,
      "mig -cgi 20,20,20,20,20,20,20,20 -C",
      capture("nvidia-smi_mig-cgi-C_GH200-96GB_550.54.15_error-in-use.txt"),
      255,
    );
    assert.equal(n.state().gpus[0]?.gis.length, 0);
  });

  it("refuses a non-root caller with Insufficient Permissions, unless mig/config is granted", async () => {
    const n = node("H100-80GB", "580.173.02");
    await expectRun(
      n,
      "mig -cgi 19 -C",
      "Unable to create a GPU instance on GPU  0 using profile 19: Insufficient Permissions\nFailed to create GPU instances: Insufficient Permissions\n",
      4,
      1000,
    );
    n.edit((s) => {
      s.nonRootCaps = { migMonitor: true, migConfig: true };
    });
    assert.equal((await n.run("mig -cgi 19 -C", 1000)).code, 0);
  });

  it("says there is no MIG-enabled device when MIG is off", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    const r = await n.run("mig -cgi 19");
    assert.equal(r.out, "No MIG-enabled devices found.\n");
    assert.notEqual(r.code, 0);
  });
});

describe("simulated nvidia-smi mig -cci", () => {
  it("creates CIs in a 3g GI; R450 lines do not name the CI", async () => {
    const r450 = node("A100-40GB", "450.80.02");
    await r450.setup("mig -cgi 9,9");
    await expectRun(
      r450,
      "mig -cci 0,0,0 -gi 1",
      capture("nvidia-smi_mig-cci_A100-SXM4-40GB_guide_3x1c.txt"),
    );
    const later = node("A100-40GB", "515.86.01");
    await later.setup("mig -cgi 9,9");
    await expectRun(
      later,
      "mig -i 0 -cci 0,0,0 -gi 2",
      capture("nvidia-smi_mig-cci_A100-PCIe-40GB_pre-R525_3x1c-gi2.txt"),
    );
    const cis = later.state().gpus[0]?.gis.find((g) => g.id === 2)?.cis ?? [];
    assert.deepEqual(
      cis.map((c) => `${c.id}@${c.start}`),
      ["0@0", "1@1", "2@2"],
    );
  });

  it("creates the default CI in every GI without -gi, and refuses a full GI", async () => {
    const n = node("A100-40GB", "450.80.02");
    await n.setup("mig -cgi 19,19");
    const r = await n.run("mig -cci");
    assert.equal(
      r.out,
      "Successfully created compute instance on GPU  0 GPU instance ID 11 using profile MIG 1g.5gb (ID  0)\n" +
        "Successfully created compute instance on GPU  0 GPU instance ID 13 using profile MIG 1g.5gb (ID  0)\n",
    );
    const again = await n.run("mig -cci -gi 13");
    assert.equal(again.code, 255);
    assert.match(
      again.out,
      /GPU instance ID 13 using profile 0: Insufficient Resources\nFailed to create compute instances: Insufficient Resources\n$/,
    );
  });

  it("gives a 1-slice double-memory GI CI profile 7, placed at 6:2 on an empty GPU", async () => {
    // CI profile 7: GH200LOG and IDX-29100794368. The first 1g.20gb went to start 6 on an H100 PCIe
    // in kubernetes-sigs/dra-driver-nvidia-gpu#1018 (device "mig-1g20gb-15-6").
    const n = node("H100-80GB", "580.173.02");
    const r = await n.run("mig -cgi 15 -C");
    assert.equal(
      r.out,
      "Successfully created GPU instance ID  6 on GPU  0 using profile MIG 1g.20gb (ID 15)\n" +
        "Successfully created compute instance ID  0 on GPU  0 GPU instance ID  6 using profile MIG 1g.20gb (ID  7)\n",
    );
  });
});

describe("simulated nvidia-smi mig -dci / -dgi", () => {
  it("destroys CIs and GIs in -lgi order (H100, 7×1g)", async () => {
    const n = node("H100-80GB", "550.127.06");
    await n.setup("mig -cgi 19,19,19,19,19,19,19 -C");
    await expectRun(n, "mig -dci", capture("nvidia-smi_mig-dci_H100-80GB-HBM3_unknown_7x.txt"));
    await expectRun(n, "mig -dgi", capture("nvidia-smi_mig-dgi_H100-80GB-HBM3_unknown_7x.txt"));
    assert.deepEqual(n.state().gpus[0]?.gis, []);
  });

  it("destroys selected CIs, then their GI (A100 sessions)", async () => {
    const guide = node("A100-40GB", "450.80.02");
    await guide.setup("mig -cgi 9,9", "mig -cci 0,0,0 -gi 1");
    await expectRun(
      guide,
      "mig -dci -ci 0,1,2 -gi 1",
      capture("nvidia-smi_mig-dci_A100-SXM4-40GB_guide_ci-0,1,2-gi1.txt"),
    );
    await expectRun(guide, "mig -dgi", capture("nvidia-smi_mig-dgi_A100-SXM4-40GB_guide_2gi.txt"));

    const pre = node("A100-40GB", "515.86.01");
    await pre.setup("mig -cgi 9,9", "mig -cci 0,0,0 -gi 2");
    await expectRun(
      pre,
      "mig -i 0 -dci -gi 2 -ci 0,1,2",
      capture("nvidia-smi_mig-dci_A100-PCIe-40GB_pre-R525_gi2-ci0,1,2.txt"),
    );

    const r515 = node("NVIDIA A100 80GB PCIe", "515.86.01");
    await r515.setup("mig -cgi 9,9", "mig -cci 0,0 -gi 1");
    await expectRun(
      r515,
      "mig -i 0 -gi 1 -ci 0,1 -dci",
      capture("nvidia-smi_mig-dci_A100-PCIe-80GB_515.86.01_gi1-ci0,1.txt"),
    );
    await expectRun(
      r515,
      "mig -i 0 -gi 1 -dgi",
      capture("nvidia-smi_mig-dgi_A100-PCIe-80GB_515.86.01_gi1.txt"),
    );
  });

  it("refuses to destroy a GI that still has CIs, or a CI a process runs in", async () => {
    const n = node("A100-80GB", "535.183.01");
    await n.setup("mig -cgi 9 -C");
    const gi = n.state().gpus[0]?.gis[0]?.id ?? -1;
    const r = await n.run(`mig -dgi -gi ${gi}`);
    assert.equal(
      r.out,
      `Unable to destroy GPU instance ID  ${gi} from GPU  0: In use by another client\nFailed to destroy GPU instances: In use by another client\n`,
    );
    assert.equal(r.code, 255);
    n.gpu((g) => {
      g.processes.push({ pid: 77, name: "python", type: "C", gi, ci: 0, usedMiB: 1000 });
    });
    const c = await n.run("mig -dci");
    assert.equal(
      c.out,
      `Unable to destroy compute instance ID  0 from GPU  0 GPU instance ID  ${gi}: In use by another client\nFailed to destroy compute instances: In use by another client\n`,
    );
    assert.equal(n.state().gpus[0]?.gis[0]?.cis.length, 1);
  });

  it("reports missing instances with Not Found", async () => {
    const n = node("H100-80GB", "580.173.02");
    const none = await n.run("mig -dgi");
    assert.equal(none.out, "No GPU instances found: Not Found\n");
    assert.equal(none.code, 6);
    await n.setup("mig -cgi 19");
    const ci = await n.run("mig -dci -gi 13 -ci 4");
    assert.match(
      ci.out,
      /^Unable to destroy compute instance ID {2}4 from GPU {2}0 GPU instance ID 13: Not Found\n/,
    );
    const gi = await n.run("mig -dgi -gi 3");
    assert.match(gi.out, /^Unable to destroy GPU instance ID {2}3 from GPU {2}0: Not Found\n/);
  });
});
