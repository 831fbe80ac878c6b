// Classifier of CUDA failure lines, whatever printed them: the CUDA runtime/driver texts as
// PyTorch, nccl-tests and gpu-burn relay them, and PyTorch's out-of-memory message in its three
// layouts (reference workloads.md 4.1-4.2). The chaos layer uses it to tell whether an aggressor
// "failed the expected way" (an OOM when it over-allocated, an illegal address when it was armed
// to fault) and whether a victim died of something it should have been shielded from.

import { parseError } from "./text.js";

const KIND = "cuda-error";

export type CudaErrorKind =
  | "oom"
  | "illegal-address"
  | "illegal-instruction"
  | "misaligned-address"
  | "launch-failure"
  | "launch-timeout"
  | "device-assert"
  | "ecc-uncorrectable"
  | "no-device"
  | "devices-unavailable"
  | "system-not-ready"
  | "mps-not-ready"
  | "unknown";

export interface CudaError {
  kind: CudaErrorKind;
  /** The whole line, trimmed, so a report can quote it. */
  message: string;
  /** 1-based line of the text the error was found on. */
  line: number;
  /** PyTorch OOM: the allocation that failed ("Tried to allocate"). */
  requestedBytes?: number;
  /** PyTorch OOM: the device's (or MIG slice's) total capacity. */
  totalBytes?: number;
  /** PyTorch OOM: what the allocator saw free. */
  freeBytes?: number;
  /** PyTorch OOM: the CUDA ordinal as the process saw it (always 0 inside one MIG slice). */
  gpu?: number;
}

/** First match wins, so the specific texts come before the generic ones. */
const PATTERNS: [CudaErrorKind, RegExp][] = [
  [
    "oom",
    /CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|\bout of memory\b/i,
  ],
  [
    "illegal-address",
    /an illegal memory access was encountered|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress/,
  ],
  [
    "illegal-instruction",
    /an illegal instruction was encountered|CUDA_ERROR_ILLEGAL_INSTRUCTION|cudaErrorIllegalInstruction/,
  ],
  [
    "misaligned-address",
    /misaligned address|CUDA_ERROR_MISALIGNED_ADDRESS|cudaErrorMisalignedAddress/,
  ],
  ["launch-failure", /unspecified launch failure|CUDA_ERROR_LAUNCH_FAILED|cudaErrorLaunchFailure/],
  [
    "launch-timeout",
    /the launch timed out and was terminated|CUDA_ERROR_LAUNCH_TIMEOUT|cudaErrorLaunchTimeout/,
  ],
  ["device-assert", /device-side assert triggered|CUDA_ERROR_ASSERT|cudaErrorAssert/],
  [
    "ecc-uncorrectable",
    /uncorrectable ECC error encountered|CUDA_ERROR_ECC_UNCORRECTABLE|cudaErrorECCUncorrectable/,
  ],
  [
    "no-device",
    /no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice|No CUDA devices/,
  ],
  [
    "devices-unavailable",
    /all CUDA-capable devices are busy or unavailable|CUDA_ERROR_DEVICES_UNAVAILABLE|cudaErrorDevicesUnavailable/,
  ],
  [
    "system-not-ready",
    /system not yet initialized|CUDA_ERROR_SYSTEM_NOT_READY|cudaErrorSystemNotReady/,
  ],
  [
    "mps-not-ready",
    /CUDA_ERROR_MPS_SERVER_NOT_READY|cudaErrorMpsServerNotReady|MPS server is not ready/,
  ],
  ["unknown", /CUDA_ERROR_UNKNOWN|cudaErrorUnknown|CUDA error: unknown error/],
];

/** The kernel's OOM killer also says "Out of memory"; that is host memory, not a CUDA error. */
const HOST_OOM = /Killed process|oom-kill|oom_reaper|invoked oom-killer/;

const UNITS: Record<string, number> = {
  bytes: 1,
  KiB: 2 ** 10,
  MiB: 2 ** 20,
  GiB: 2 ** 30,
  TiB: 2 ** 40,
};
const SIZE = "(\\d+(?:\\.\\d+)?) (bytes|KiB|MiB|GiB|TiB)";
const REQUESTED = new RegExp(`Tried to allocate ${SIZE}`);
// 2.1+: "GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free" (2.1 spelled it "capacty").
const CAPACITY = new RegExp(
  `GPU (\\d+) has a total capac(?:i)?ty of ${SIZE} of which ${SIZE} is free`,
);
// Before 2.1: "(GPU 0; 14.56 GiB total capacity; 649.97 MiB already allocated; 1.31 GiB free; ...)".
const LEGACY = new RegExp(`\\(GPU (\\d+); ${SIZE} total capacity;.*?; ${SIZE} free;`);

function bytes(value: string | undefined, unit: string | undefined): number {
  return Math.round(Number(value) * (UNITS[unit ?? ""] ?? Number.NaN));
}

/** Every CUDA error line in `text`, in order; lines that are not CUDA errors are skipped. */
export function parseCudaErrors(text: string): CudaError[] {
  const found: CudaError[] = [];
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    const hit = PATTERNS.find(([, pattern]) => pattern.test(line));
    if (!hit || (hit[0] === "oom" && HOST_OOM.test(line))) continue;
    const error: CudaError = { kind: hit[0], message: line, line: index + 1 };
    if (/CUDA out of memory\./.test(line)) addPytorchOom(error, line, index + 1);
    found.push(error);
  }
  return found;
}

/** PyTorch always names the size it tried to allocate; a message without it was cut short. */
function addPytorchOom(error: CudaError, line: string, lineNo: number): void {
  const requested = REQUESTED.exec(line);
  if (!requested)
    throw parseError(KIND, lineNo, "'CUDA out of memory. Tried to allocate <size>'", line);
  error.requestedBytes = bytes(requested[1], requested[2]);
  const capacity = CAPACITY.exec(line);
  const legacy = LEGACY.exec(line);
  if (capacity) {
    error.gpu = Number(capacity[1]);
    error.totalBytes = bytes(capacity[2], capacity[3]);
    error.freeBytes = bytes(capacity[4], capacity[5]);
  } else if (legacy) {
    error.gpu = Number(legacy[1]);
    error.totalBytes = bytes(legacy[2], legacy[3]);
    error.freeBytes = bytes(legacy[4], legacy[5]);
  }
}

/** The first CUDA error of `text` (the cause; later ones are usually its sticky echoes), or null. */
export function classifyCudaError(text: string): CudaError | null {
  return parseCudaErrors(text)[0] ?? null;
}
