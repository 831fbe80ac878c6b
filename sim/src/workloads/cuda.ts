// The CUDA errors the simulated workloads can meet, with the runtime's own names, numbers and
// cudaGetErrorString texts (reference workloads.md 4.1; 807's text from the CUDA runtime API
// docs), and the line our built-in programs print for one. workloads/slicecheck.cuh
// (sc_cuda_fail) prints
//   CUDA error: <text> (<name>=<code> from <call> at <file>:<line>)
// on stderr and exits 2 (SC_EXIT_CUDA); <call> is the failing call's source text. The file and
// line are looked up in the CUDA sources this package ships, so they follow edits there.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface CudaError {
  code: number;
  name: string;
  text: string;
}

export const CUDA = {
  oom: { code: 2, name: "cudaErrorMemoryAllocation", text: "out of memory" },
  noDevice: { code: 100, name: "cudaErrorNoDevice", text: "no CUDA-capable device is detected" },
  illegalAddress: {
    code: 700,
    name: "cudaErrorIllegalAddress",
    text: "an illegal memory access was encountered",
  },
  // What a kernel that executes `trap` gets: the context is lost without a more precise cause.
  launchFailure: { code: 719, name: "cudaErrorLaunchFailure", text: "unspecified launch failure" },
  mpsNotReady: {
    code: 807,
    name: "cudaErrorMpsServerNotReady",
    text: "MPS server is not ready to accept new MPS client requests",
  },
} as const satisfies Record<string, CudaError>;

/** SC_EXIT_CUDA of workloads/slicecheck.cuh: every CUDA error ends a built-in program with 2. */
export const EXIT_CUDA = 2;

export function cudaErrorByCode(code: number): CudaError {
  return Object.values(CUDA).find((e) => e.code === code) ?? CUDA.illegalAddress;
}

/** Where a call sits in a built-in program's source. */
export interface CallSite {
  /** File name under workloads/, as __FILE__ shows it. */
  file: string;
  /** The text the program prints as the failing call (SC_CHECK's #call). */
  call: string;
  /** A fragment of the source line, to find its number. */
  needle: string;
}

const SOURCES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "workloads");

function lineOf(site: CallSite): number {
  try {
    const lines = readFileSync(join(SOURCES, site.file), "utf8").split("\n");
    return lines.findIndex((l) => l.includes(site.needle)) + 1;
  } catch {
    return 0;
  }
}

export function formatCudaError(e: CudaError, site: CallSite): string {
  return `CUDA error: ${e.text} (${e.name}=${e.code} from ${site.call} at ${site.file}:${lineOf(site)})`;
}

const check = (file: string, call: string): CallSite => ({
  file,
  call,
  needle: `SC_CHECK(${call})`,
});

/** The call sites the simulator reports errors at. */
export const SITES = {
  // The first call of sc_open_device: with no visible device it returns cudaErrorNoDevice.
  setDeviceFlags: check("slicecheck.cuh", "cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)"),
  // CUDA 12 creates the primary context here: an MPS refusal or no room for a context.
  setDevice: check("slicecheck.cuh", "cudaSetDevice(0)"),
  stressSync: check("stress.cu", "cudaDeviceSynchronize()"),
  serveSync: check("serve.cu", "cudaEventSynchronize(m.stop)"),
  // try_malloc's SC_CHECK(err): the sticky error surfaces at the next check's allocation.
  memhogCheck: { file: "memhog.cu", call: "err", needle: "SC_CHECK(err);" },
  memhogFree: { file: "memhog.cu", call: "cudaFree(p)", needle: "(void* p : held) SC_CHECK" },
  crasherArmed: { file: "crasher.cu", call: "the armed kernel", needle: '"the armed kernel"' },
} as const satisfies Record<string, CallSite>;
