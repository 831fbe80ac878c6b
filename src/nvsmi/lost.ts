// A GPU NVML cannot reach (fallen off the bus, NVML_ERROR_GPU_IS_LOST): nvidia-smi prints one
// line for it instead of its entry and goes on with the other GPUs, exiting 15 (nvidia-smi(1),
// RETURN VALUE 15: "The GPU has fallen off the bus or has otherwise become inaccessible"). The
// reference holds no capture of it: the wording is the one NVIDIA's forums and bug reports quote,
// `Unable to determine the device handle for GPU0000:07:00.0: GPU is lost.  Reboot the system to
// recover this GPU` (no space after `GPU`). Read per line, so the other GPUs' output stays
// readable: one lost GPU must not hide the others.

export interface LostGpu {
  /** As nvidia-smi prints it (`0000:07:00.0`). */
  pciBusId: string;
  /** The driver's words after the bus id (`GPU is lost.  Reboot the system to recover this GPU`). */
  why: string;
  /** The whole line, as evidence. */
  line: string;
}

const LOST_LINE =
  /^Unable to determine the device handle for GPU\s*([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.\d)?):\s*(.*)$/i;

/** The lost GPUs' lines, and the output without them (what the usual parser then reads). */
export function splitLostGpus(text: string): { lost: LostGpu[]; rest: string } {
  const lost: LostGpu[] = [];
  const kept: string[] = [];
  for (const l of text.split("\n")) {
    const m = LOST_LINE.exec(l.trim());
    if (m) lost.push({ pciBusId: m[1]!, why: m[2]!.trim(), line: l.trim() });
    else kept.push(l);
  }
  return { lost, rest: kept.join("\n") };
}

/** nvidia-smi's exit code when a GPU among those asked for is lost. */
export const NVSMI_EXIT_GPU_LOST = 15;
