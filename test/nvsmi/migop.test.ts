// Result lines of -cgi/-cci/-dci/-dgi, -mig 0|1 and --gpu-reset: successes, warnings, pending
// states and the driver's errors, each with the driver's own reason.

import assert from "node:assert/strict";
import { parseMigOp } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, editLine, lineOf } from "./helpers.js";

describe("nvsmi mig-op", () => {
  it("reads -cgi -C: each GI with its default CI", () => {
    const { ops } = parseMigOp(
      readCapture("nvidia-smi_mig-cgi-C_H100-PCIe-80GB_525.125.06_3g+3x1g.txt"),
    );
    assert.deepEqual(ops.slice(0, 2), [
      { op: "create-gi", gpu: 0, gpuInstanceId: 2, profileName: "3g.40gb", profileId: 9 },
      {
        op: "create-ci",
        gpu: 0,
        gpuInstanceId: 2,
        computeInstanceId: 0,
        profileName: "3g.40gb",
        profileId: 2,
      },
    ]);
    assert.deepEqual(
      ops.filter((o) => o.op === "create-gi").map((o) => o.gpuInstanceId),
      [2, 7, 8, 9],
    );
  });

  it("keeps the driver's GI allocation order (H100: 13, 11, 12, 7, 8, 9, 10)", () => {
    const { ops } = parseMigOp(
      readCapture("nvidia-smi_mig-cgi-C_H100-80GB-HBM3_unknown_7x1g.10gb.txt"),
    );
    assert.deepEqual(
      ops.flatMap((o) => (o.op === "create-gi" ? [o.gpuInstanceId] : [])),
      [13, 11, 12, 7, 8, 9, 10],
    );
  });

  it("reads -cci in both formats: with the CI ID (R515+) and without (R450)", () => {
    const withId = parseMigOp(
      readCapture("nvidia-smi_mig-cci_A100-PCIe-40GB_pre-R525_3x1c-gi2.txt"),
    );
    assert.deepEqual(
      withId.ops.map((o) => (o.op === "create-ci" ? o.computeInstanceId : "?")),
      [0, 1, 2],
    );
    const without = parseMigOp(readCapture("nvidia-smi_mig-cci_A100-SXM4-40GB_guide_3x1c.txt"));
    assert.deepEqual(without.ops[0], {
      op: "create-ci",
      gpu: 0,
      gpuInstanceId: 1,
      computeInstanceId: null,
      profileName: "1c.3g.20gb",
      profileId: 0,
    });
  });

  it("reads -dci and -dgi", () => {
    const dci = parseMigOp(
      readCapture("nvidia-smi_mig-dci_A100-PCIe-80GB_515.86.01_gi1-ci0,1.txt"),
    );
    assert.deepEqual(dci.ops, [
      { op: "destroy-ci", gpu: 0, gpuInstanceId: 1, computeInstanceId: 0 },
      { op: "destroy-ci", gpu: 0, gpuInstanceId: 1, computeInstanceId: 1 },
    ]);
    const dgi = parseMigOp(readCapture("nvidia-smi_mig-dgi_H100-80GB-HBM3_unknown_7x.txt"));
    assert.deepEqual(
      dgi.ops.map((o) => (o.op === "destroy-gi" ? o.gpuInstanceId : -1)),
      [7, 8, 9, 10, 11, 12, 13],
    );
  });

  it("reports Insufficient Resources after the GIs that did get created", () => {
    const { ops } = parseMigOp(
      readCapture("nvidia-smi_mig-cgi_A100-SXM4-40GB_guide_error-insufficient-order.txt"),
    );
    assert.deepEqual(
      ops.map((o) => o.op),
      ["create-gi", "create-gi", "create-gi", "error", "error"],
    );
    assert.deepEqual(ops[3], {
      op: "error",
      gpu: 0,
      profile: "9",
      reason: "Insufficient Resources",
      message: "Unable to create a GPU instance on GPU  0 using profile 9: Insufficient Resources",
    });
    assert.deepEqual(ops[4], {
      op: "error",
      reason: "Insufficient Resources",
      message: "Failed to create GPU instances: Insufficient Resources",
    });
  });

  it("reports In use by another client", () => {
    const { ops } = parseMigOp(
      readCapture("nvidia-smi_mig-cgi-C_GH200-96GB_550.54.15_error-in-use.txt"),
    );
    assert.deepEqual(
      ops.map((o) => (o.op === "error" ? [o.gpu, o.profile, o.reason] : o.op)),
      [
        [0, "20", "In use by another client"],
        [undefined, undefined, "In use by another client"],
      ],
    );
  });

  it("reads -mig 0/1 with the persistence warning and the pending-enable state", () => {
    const on = parseMigOp(
      readCapture("nvidia-smi_-mig1_GH200-96GB_550.54.15_persistence-warning.txt"),
    );
    assert.deepEqual(on.ops[0], { op: "mig-mode", pci: "00000009:01:00.0", enabled: true });
    const warning = on.ops[1]!;
    assert.ok(warning.op === "warning" && warning.pci === "00000009:01:00.0");
    assert.match(warning.message, /^Warning: persistence mode is disabled on device/);
    const off = parseMigOp(readCapture("nvidia-smi_-mig0_H100-PCIe-80GB_525.125.06_disabled.txt"));
    assert.deepEqual(off.ops, [{ op: "mig-mode", pci: "00000000:01:00.0", enabled: false }]);
    const pending = parseMigOp(
      readCapture("nvidia-smi_-mig1_A100-PCIe-80GB_515.86.01_pending-in-use.txt"),
    );
    assert.deepEqual(pending.ops, [
      {
        op: "pending",
        pci: "00000001:00:00.0",
        mode: "enable",
        reason: "In use by another client",
      },
    ]);
  });

  it("reads the documented pending, reset and failure texts (mig-reference §7, §8)", () => {
    const notSupported = [
      "Warning: MIG mode is in pending enable state for GPU 00000000:00:03.0:Not Supported",
      "Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU 00000000:00:03.0",
      "All done.",
      "Resetting GPU 00000000:00:03.0 is not supported.",
    ].join("\n");
    assert.deepEqual(parseMigOp(notSupported).ops, [
      { op: "pending", pci: "00000000:00:03.0", mode: "enable", reason: "Not Supported" },
      {
        op: "error",
        pci: "00000000:00:03.0",
        reason: "Not Supported",
        message: "Resetting GPU 00000000:00:03.0 is not supported.",
      },
    ]);
    const disable = [
      "Unable to disable MIG Mode for GPU 00000009:01:00.0: In use by another client",
      "Terminating early due to previous errors.",
    ].join("\n");
    assert.deepEqual(parseMigOp(disable).ops, [
      {
        op: "error",
        pci: "00000009:01:00.0",
        reason: "In use by another client",
        message: "Unable to disable MIG Mode for GPU 00000009:01:00.0: In use by another client",
      },
    ]);
    const dgi = [
      "Unable to destroy GPU instance ID  1 from GPU  7: In use by another client",
      "Failed to destroy GPU instances: In use by another client",
    ].join("\n");
    assert.deepEqual(parseMigOp(dgi).ops[0], {
      op: "error",
      gpu: 7,
      gpuInstanceId: 1,
      reason: "In use by another client",
      message: "Unable to destroy GPU instance ID  1 from GPU  7: In use by another client",
    });
  });

  it("reads a refused reset, including the wrapped explanation that follows it", () => {
    const text = [
      "The following GPUs could not be reset:",
      "  GPU 00000000:1A:00.0: In use by another client",
      "",
      "1 device is currently being used by one or more other processes (e.g. Fabric",
      "Manager, CUDA application, graphics application such as an X server, or a",
      "monitoring application such as another instance of nvidia-smi). Please first kill",
      "all processes using this device and all compute applications running in the",
      "system.",
    ].join("\n");
    assert.deepEqual(parseMigOp(text).ops, [
      {
        op: "error",
        pci: "00000000:1A:00.0",
        reason: "In use by another client",
        message: "GPU 00000000:1A:00.0: In use by another client",
      },
    ]);
    const ok = parseMigOp(readCapture("nvidia-smi_--gpu-reset_GH200-96GB_550.54.15_success.txt"));
    assert.deepEqual(ok.ops, [{ op: "reset", pci: "00000009:01:00.0" }]);
  });

  it("never lets a cut success line pass as success", () => {
    const text = readCapture("nvidia-smi_mig-cgi-C_A30-24GB_535.183.01_2g.12gb.txt");
    const no = lineOf(text, "Successfully created GPU instance");
    const cut = editLine(text, no, (l) => l.slice(0, l.indexOf("using") + 8));
    assertParseError(() => parseMigOp(cut), "mig-op", no);
    const ci = lineOf(text, "Successfully created compute instance");
    assertParseError(
      () => parseMigOp(editLine(text, ci, (l) => l.replace("(ID  1)", "(ID  1"))),
      "mig-op",
      ci,
    );
  });

  it("rejects text that is no result line", () => {
    assertParseError(() => parseMigOp("All done.\nSegmentation fault\n"), "mig-op", 2);
  });
});
