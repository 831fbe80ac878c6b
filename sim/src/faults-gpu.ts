// Whole-GPU faults of the simulated node: a GPU that falls off the bus, an uncorrectable ECC
// error, NVLinks down. Each logs the kernel lines a real node logs and is undone by `--clear`.

import { type FaultKind, gpuOf, gpuOfRecord, usage } from "./fault-kind.js";
import { formatXid } from "./klog/xid.js";
import { pciOf } from "./workloads/device.js";

/**
 * gpu-lost: the GPU fell off the bus (Xid 79). The kernel log gains the driver's two lines for
 * it (reference workloads.md 4.3: `79 GPU has fallen off the bus.`, and the `NVRM: GPU
 * 0000:07:00.0: GPU has fallen off the bus.` line that comes with or without the Xid), then
 * nvidia-smi reports the GPU lost and leaves it out (sim/nvsmi/cli.ts). A real one needs a
 * reboot; `--clear` is the simulated reboot (the log lines stay: they are history).
 */
export const gpuLost: FaultKind = {
  usage: "gpu-lost --gpu N: the GPU falls off the bus (Xid 79); nvidia-smi reports it lost",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    gpu.lost = true;
    const pci = pciOf(gpu);
    return {
      record: { kind: "gpu-lost", gpu: gpu.index },
      detail: `GPU ${gpu.index} (${gpu.pciBusId}) has fallen off the bus`,
      klog: {
        gpu,
        lines: [
          formatXid(
            { gpu, pci, xid: 79, pid: null, name: null, gi: null, ci: null, messages: [] },
            "GPU has fallen off the bus.",
          ),
          `NVRM: GPU ${pci}.0: GPU has fallen off the bus.`,
        ],
      },
    };
  },
  undo({ state }, r) {
    if (r.kind !== "gpu-lost") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) delete gpu.lost;
  },
};

/**
 * ecc-uncorrectable: an uncorrectable memory error. GPUs with error containment (GA100, GH100
 * and related parts, reference workloads.md 4.5) log Xid 94 (contained: only the faulting
 * application dies) or 95 (uncontained: the GPU needs a reset); others log Xid 48 (double bit
 * error). `--name contained|uncontained` picks the class (uncontained by default: the whole-GPU
 * one). The 94 text is the real line the reference quotes; the references hold no 95 or 48
 * line, so those are written after it (95 with RST: Yes) and the older docs' 48 description.
 * The volatile uncorrected ECC count goes up by one.
 */
export const eccUncorrectable: FaultKind = {
  usage:
    "ecc-uncorrectable --gpu N [--name contained|uncontained]: an uncorrectable ECC error (Xid 48/94/95)",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    const cls = o.name ?? "uncontained";
    if (cls !== "contained" && cls !== "uncontained")
      throw usage(`ecc-uncorrectable takes --name contained|uncontained, got '${cls}'`);
    const previous = gpu.eccUncorrected ?? 0;
    gpu.eccUncorrected = previous + 1;
    const containment = /^(A100|A30|H100|H200|H20|GH200)/i.test(gpu.product);
    const [xid, text] = !containment
      ? [48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer."]
      : cls === "contained"
        ? [94, "Contained: SM (0x1). RST: No, D-RST: No"]
        : [95, "Uncontained: FBHUB. RST: Yes, D-RST: No"];
    const pci = pciOf(gpu);
    return {
      record: { kind: "ecc-uncorrectable", gpu: gpu.index, previous },
      detail: `GPU ${gpu.index} logged an uncorrectable ECC error (Xid ${xid})`,
      klog: {
        gpu,
        lines: [
          formatXid(
            { gpu, pci, xid, pid: null, name: null, gi: null, ci: null, messages: [] },
            text,
          ),
        ],
      },
    };
  },
  undo({ state }, r) {
    if (r.kind !== "ecc-uncorrectable") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) gpu.eccUncorrected = r.previous;
  },
};

/**
 * nvlink-down: every NVLink of the GPU is down (a link that failed to train, a bad NVSwitch
 * port). `nvidia-smi nvlink -s` shows its links `<inactive>`, `topo -m` shows a PCIe path (NODE
 * or SYS) between it and its peers instead of NV#, and an all_reduce that includes it goes
 * through host memory (SHM) at PCIe bandwidth (workloads/nccl.ts). No Xid is logged: a link
 * that never trained logs none at run time. `--clear` brings the links back.
 */
export const nvlinkDown: FaultKind = {
  usage: "nvlink-down --gpu N: the GPU's NVLinks are inactive; NCCL falls back to PCIe",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    gpu.nvlinkDown = true;
    return {
      record: { kind: "nvlink-down", gpu: gpu.index },
      detail: `GPU ${gpu.index} (${gpu.pciBusId}): every NVLink down`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "nvlink-down") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) delete gpu.nvlinkDown;
  },
};
