// `-mig 0|1` and `-r/--gpu-reset`: the captured messages, and the mode rules per architecture
// (Ampere: pending until the GPU can be reset; Hopper and later: at once when nothing holds it).

import assert from "node:assert/strict";
import { rebootState, upgradeDriverState } from "../../src/nvsmi/state.js";
import { capture, cleanupNodes, SimNode } from "./helpers.js";

after(cleanupNodes);

function bus(n: SimNode, pci: string, persistence = true): void {
  n.gpu((g) => {
    g.pciBusId = pci;
    g.persistenceMode = persistence;
  });
}

async function expectRun(n: SimNode, args: string, expected: string, code = 0, uid = 0) {
  const r = await n.run(args, uid);
  assert.equal(r.out, expected);
  assert.equal(r.code, code);
}

describe("simulated nvidia-smi -mig", () => {
  it("prints the captured enable and disable messages", async () => {
    const a100 = new SimNode({ product: "A100-40GB", driver: "450.80.02" });
    bus(a100, "00000000:36:00.0");
    await expectRun(
      a100,
      "-mig 1",
      capture("nvidia-smi_-mig1_A100-SXM4-40GB_450.80.02_enabled.txt"),
    );

    const h100 = new SimNode({ product: "H100-PCIE", driver: "525.125.06" });
    bus(h100, "00000000:01:00.0");
    await expectRun(
      h100,
      "-mig 1",
      capture("nvidia-smi_-mig1_H100-PCIe-80GB_525.125.06_enabled.txt"),
    );
    await expectRun(
      h100,
      "-mig 0",
      capture("nvidia-smi_-mig0_H100-PCIe-80GB_525.125.06_disabled.txt"),
    );

    const sxm = new SimNode({ product: "H100-80GB", driver: "550.127.06", migEnabled: true });
    bus(sxm, "00000000:16:00.0");
    await expectRun(sxm, "-mig 0", capture("nvidia-smi_-mig0_H100-80GB-HBM3_unknown_disabled.txt"));
  });

  it("warns when persistence mode is off (GH200 550.54.15, A100 80GB 515.86.01)", async () => {
    const gh = new SimNode({ product: "GH200-96GB", driver: "550.54.15" });
    bus(gh, "00000009:01:00.0", false);
    await expectRun(
      gh,
      "-mig 1",
      capture("nvidia-smi_-mig1_GH200-96GB_550.54.15_persistence-warning.txt"),
    );
    await expectRun(
      gh,
      "-mig 0",
      capture("nvidia-smi_-mig0_GH200-96GB_550.54.15_disabled-persistence-warning.txt"),
    );

    const a100 = new SimNode({
      product: "NVIDIA A100 80GB PCIe",
      driver: "515.86.01",
      migEnabled: true,
    });
    bus(a100, "00000001:00:00.0", false);
    await expectRun(
      a100,
      "-i 0 -mig 0",
      capture("nvidia-smi_-mig0_A100-PCIe-80GB_515.86.01_persistence-warning.txt"),
    );
  });

  it("Ampere: leaves the mode pending while a client holds the GPU, until a reset", async () => {
    const n = new SimNode({ product: "NVIDIA A100 80GB PCIe", driver: "515.86.01" });
    bus(n, "00000001:00:00.0");
    n.gpu((g) => {
      g.holders.push("nvidia-persistenced");
    });
    await expectRun(
      n,
      "-mig 1",
      capture("nvidia-smi_-mig1_A100-PCIe-80GB_515.86.01_pending-in-use.txt"),
    );
    const q = "--query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader";
    assert.equal((await n.run(q)).out, "Disabled, Enabled\n");
    assert.match((await n.run("")).out, /\| +Enabled\* \|\n/);
    // MIG commands still see a disabled GPU.
    assert.equal((await n.run("mig -cgi 19")).out, "No MIG-enabled devices found.\n");

    const blocked = await n.run("-r");
    assert.equal(blocked.code, 255);
    assert.match(
      blocked.out,
      /^The following GPUs could not be reset:\n {2}GPU 00000001:00:00\.0: In use by another client\n\n1 device is currently being used/,
    );
    n.gpu((g) => {
      g.holders = [];
    });
    await expectRun(n, "-r", "GPU 00000001:00:00.0 was successfully reset.\nAll done.\n");
    assert.equal((await n.run(q)).out, "Enabled, Enabled\n");
  });

  it("Ampere: where the hypervisor blocks resets the mode stays pending (GUIDE passthrough)", async () => {
    const n = new SimNode({ product: "A100-40GB", driver: "535.183.01" });
    bus(n, "00000000:00:03.0");
    n.gpu((g) => {
      g.resetSupported = false;
    });
    await expectRun(
      n,
      "-mig 1",
      "Warning: MIG mode is in pending enable state for GPU 00000000:00:03.0:Not Supported\n" +
        "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU 00000000:00:03.0\n" +
        "All done.\n",
    );
    await expectRun(n, "--gpu-reset", "Resetting GPU 00000000:00:03.0 is not supported.\n", 3);
    assert.deepEqual(n.state().gpus[0]?.mig, { current: false, pending: true });
  });

  it("Ampere: enables at once when nothing holds the GPU (the driver's own reset succeeds)", async () => {
    const n = new SimNode({ product: "A30", driver: "535.183.01" });
    await n.setup("-mig 1");
    assert.deepEqual(n.state().gpus[0]?.mig, { current: true, pending: true });
  });

  it("Hopper: applies immediately when no client holds the GPU, refuses otherwise", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    await n.setup("-mig 1");
    assert.deepEqual(n.state().gpus[0]?.mig, { current: true, pending: true });
    assert.equal((await n.run("mig -cgi 19")).code, 0);
    await n.setup("mig -dgi");
    bus(n, "00000009:01:00.0");
    n.gpu((g) => {
      g.processes.push({ pid: 900, name: "nsys", type: "C", gi: null, ci: null, usedMiB: 0 });
    });
    await expectRun(
      n,
      "-mig 0",
      "Unable to disable MIG Mode for GPU 00000009:01:00.0: In use by another client\nTerminating early due to previous errors.\n",
      255,
    );
    assert.deepEqual(n.state().gpus[0]?.mig, { current: true, pending: true });
  });

  it("refuses to disable MIG while GPU instances exist", async () => {
    const n = new SimNode({ product: "H200", driver: "580.173.02", migEnabled: true });
    await n.setup("mig -cgi 19");
    const r = await n.run("-mig 0");
    assert.match(
      r.out,
      /^Unable to disable MIG Mode for GPU 00000000:07:00\.0: In use by another client\n/,
    );
    assert.equal(n.state().gpus[0]?.mig.current, true);
  });

  it("refuses non-root callers and GPUs without MIG", async () => {
    const n = new SimNode({ product: "B200", driver: "580.173.02" });
    await expectRun(
      n,
      "-mig 1",
      "Unable to enable MIG Mode for GPU 00000000:07:00.0: Insufficient Permissions\nTerminating early due to previous errors.\n",
      4,
      1000,
    );
    const l40s = new SimNode({ product: "L40S", driver: "580.173.02" });
    await expectRun(
      l40s,
      "-mig 1",
      "Unable to enable MIG Mode for GPU 00000000:07:00.0: Not Supported\nTerminating early due to previous errors.\n",
      3,
    );
    assert.equal((await l40s.run("mig -lgip")).out, "No MIG-enabled devices found.\n");
    const q = await l40s.run("--query-gpu=name,mig.mode.current --format=csv,noheader");
    assert.equal(q.out, "NVIDIA L40S, [N/A]\n");
  });
});

describe("simulated nvidia-smi -r / --gpu-reset", () => {
  it("prints the captured success and drops the geometry", async () => {
    const n = new SimNode({ product: "GH200-96GB", driver: "550.54.15", migEnabled: true });
    bus(n, "00000009:01:00.0");
    await n.setup("mig -cgi 9,9 -C");
    await expectRun(
      n,
      "--gpu-reset",
      capture("nvidia-smi_--gpu-reset_GH200-96GB_550.54.15_success.txt"),
    );
    const g = n.state().gpus[0];
    assert.deepEqual(g?.gis, []);
    assert.equal(g?.mig.current, true);
  });

  it("needs root", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02" });
    const r = await n.run("-r", 1000);
    assert.equal(
      r.out,
      "The following GPUs could not be reset:\n  GPU 00000000:07:00.0: Insufficient Permissions\n\n",
    );
    assert.equal(r.code, 4);
  });
});

describe("simulated node reboot and driver upgrade", () => {
  it("Ampere keeps (and applies) the InfoROM mode; Hopper comes back without MIG; geometry is gone", async () => {
    const a100 = new SimNode({ product: "A100-80GB", driver: "535.183.01" });
    a100.gpu((g) => {
      g.holders = ["dcgm"];
    });
    await a100.setup("-mig 1");
    a100.edit(rebootState);
    assert.deepEqual(a100.state().gpus[0]?.mig, { current: true, pending: true });

    const h100 = new SimNode({ product: "H100-80GB", driver: "550.127.06", migEnabled: true });
    await h100.setup("mig -cgi 9,9 -C");
    h100.edit((s) => upgradeDriverState(s, "580.173.02"));
    const s = h100.state();
    assert.equal(s.driver, "580.173.02");
    assert.equal(s.cuda, "13.0");
    assert.deepEqual(s.gpus[0]?.mig, { current: false, pending: false });
    assert.deepEqual(s.gpus[0]?.gis, []);
  });
});
