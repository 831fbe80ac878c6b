// Xid lines as the NVIDIA kernel module prints them (open-gpu-kernel-modules kernel_rc.c, as
// quoted in reference workloads.md 4.3), so that src/nvsmi/xid.ts reads the simulated kernel
// log exactly as a real one:
//   NVRM: GPU at PCI:%04x:%02x:%02x: GPU-<uuid>                 once per GPU, before its first Xid
//   NVRM: GPU Board Serial Number: %s
//   NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:%02u[ GPU-CI:%02u]]): %d, pid=%s, name=%s, %s
// The MIG attribution is printed whenever the faulting GI/CI is known. The reference notes that
// no real MIG-attributed capture exists and that GSP builds may omit it; the simulator always
// attributes, which is what a harness checking containment needs to see.

import { createHash } from "node:crypto";
import type { SimGpu } from "../nvsmi/state.js";
import { appendKernelLog, KERN } from "./log.js";

export interface XidReport {
  gpu: SimGpu;
  /** `0000:07:00`. */
  pci: string;
  xid: number;
  pid: number | null;
  /** The process's command name; the kernel keeps 15 characters (TASK_COMM_LEN - 1). */
  name: string | null;
  gi: number | null;
  ci: number | null;
  /** One message per line: some Xids come as a burst of lines with the same number. */
  messages: readonly string[];
}

function two(n: number): string {
  return String(n).padStart(2, "0");
}

export function formatXid(r: XidReport, message: string): string {
  const mig =
    r.gi === null ? "" : ` GPU-I:${two(r.gi)}${r.ci === null ? "" : ` GPU-CI:${two(r.ci)}`}`;
  const who =
    r.pid === null
      ? "pid='<unknown>', name=<unknown>, "
      : `pid=${r.pid}, name=${(r.name ?? "<unknown>").slice(0, 15)}, `;
  return `NVRM: Xid (PCI:${r.pci}${mig}): ${r.xid}, ${who}${message}`;
}

/** A stable 13-digit board serial per GPU UUID (real ones look like 1650124014249). */
export function boardSerial(uuid: string): string {
  const h = createHash("sha256").update(`serial:${uuid}`).digest();
  return `1${String((h.readUInt32BE(0) * 1000 + (h.readUInt16BE(4) % 1000)) % 1e12).padStart(12, "0")}`;
}

export function gpuBanner(gpu: SimGpu, pci: string): string[] {
  return [
    `NVRM: GPU at PCI:${pci}: ${gpu.uuid}`,
    `NVRM: GPU Board Serial Number: ${boardSerial(gpu.uuid)}`,
  ];
}

/**
 * Xid 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, "GPU memory page fault"): what an access to an
 * unmapped address raises on Ampere and later; the engine and fault type are those of the real
 * line in the reference (an H100 log), the address is derived from the pid.
 */
export function mmuFaultMessage(pid: number): string {
  const hi = (0x7000 + (pid % 0x0fff)).toString(16);
  const lo = (0x1c000000 + (pid % 0x1000) * 0x1000).toString(16).padStart(8, "0");
  return `Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x${hi}_${lo}. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE`;
}

/**
 * Xid 13 (ROBUST_CHANNEL_GR_EXCEPTION, "Graphics Engine Exception"): an SM exception such as a
 * `trap`. The warp-error text a trap gets is not in the references; these are the texts of the
 * real Xid 13 burst they quote (warp exception, then the SM's global exception).
 */
export function smExceptionMessages(): string[] {
  return [
    "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Illegal Instruction Parameter",
    "Graphics SM Global Exception on (GPC 0, TPC 0, SM 0): Multiple Warp Errors",
  ];
}

/** Appends the report (preceded by the GPU's banner the first time that GPU has an Xid). */
export async function logXid(stateDir: string, r: XidReport): Promise<void> {
  const lines = r.messages.map((m) => formatXid(r, m));
  await appendKernelLog(stateDir, lines, KERN.warning, (log) => {
    const seen = log.some((rec) => rec.text.startsWith(`NVRM: GPU at PCI:${r.pci}: `));
    return seen ? [] : gpuBanner(r.gpu, r.pci);
  });
}
