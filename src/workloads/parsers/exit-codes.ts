// Exit statuses of the third-party workloads, so a launcher can say why a run ended without
// re-reading its output. Sources: reference workloads.md 1.4 (nccl-tests testResult_t, v2.19.6)
// and 2.3 (gpu-burn). Codes 124 and 137 also come from the `timeout -k` wrapper every remote
// command runs under, which is why the deadline meaning is listed next to the tool's own.

export type NcclTestsExitKind =
  | "ok"
  | "internal-error"
  | "cuda-error"
  | "nccl-error"
  | "timeout"
  | "not-implemented"
  | "invalid-usage"
  | "check-failed"
  | "deadline"
  | "signal"
  | "unknown";

export interface ExitMeaning<K extends string> {
  code: number;
  kind: K;
  meaning: string;
}

const NCCL_TESTS: Record<number, [NcclTestsExitKind, string]> = {
  0: ["ok", "all sizes ran; still check #wrong and the out-of-bounds footer"],
  1: [
    "internal-error",
    "internal error, or (v2.0-v2.17.2) wrong data / average bus bandwidth below NCCL_TESTS_MIN_BW",
  ],
  2: [
    "cuda-error",
    "a CUDA call failed (`Test CUDA failure`), e.g. out of memory or system not initialized",
  ],
  3: [
    "nccl-error",
    "an NCCL call failed (`Test NCCL failure`), e.g. unhandled cuda error, invalid usage",
  ],
  4: ["timeout", "an operation exceeded -T/--timeout and the communicators were aborted"],
  5: [
    "not-implemented",
    "not implemented, e.g. `Invalid number of GPUs` (-g larger than the visible GPUs)",
  ],
  6: ["invalid-usage", "invalid usage of the test's options"],
  7: [
    "check-failed",
    "v2.17.3+: wrong data (#wrong > 0, `Out of bounds values : N FAILED`) or bandwidth below NCCL_TESTS_MIN_BW",
  ],
  124: ["deadline", "killed by the `timeout` deadline (SIGTERM) of the remote command"],
};

function signalMeaning<K extends string>(code: number, kind: K): ExitMeaning<K> | undefined {
  if (code <= 128 || code > 128 + 64) return undefined;
  const signal = code - 128;
  const name = (
    { 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM" } as Record<number, string>
  )[signal];
  return { code, kind, meaning: `killed by signal ${signal}${name ? ` (${name})` : ""}` };
}

/** Meaning of an nccl-tests exit status (or of mpirun's, which forwards the first failing rank's). */
export function ncclTestsExitMeaning(code: number): ExitMeaning<NcclTestsExitKind> {
  const known = NCCL_TESTS[code];
  if (known) return { code, kind: known[0], meaning: known[1] };
  return (
    signalMeaning(code, "signal" as const) ?? {
      code,
      kind: "unknown",
      meaning: "not an nccl-tests status; enum values differ between versions, read the output",
    }
  );
}

export type GpuBurnExitKind =
  | "ok"
  | "no-device"
  | "bad-option"
  | "all-clients-died"
  | "child-init-failed"
  | "child-compute-failed"
  | "signal"
  | "unknown";

const GPU_BURN: Record<number, [GpuBurnExitKind, string]> = {
  0: ["ok", "finished; exit 0 even when a GPU is FAULTY, so read the `GPU N: OK|FAULTY` summary"],
  19: ["no-device", "`No CUDA devices` (ENODEV)"],
  22: ["bad-option", "`Syntax error near -m|-i` (EINVAL)"],
  123: ["all-clients-died", "`No clients are alive!  Aborting` (ENOMEDIUM)"],
  124: [
    "child-init-failed",
    "a burn child could not init its GPU (EMEDIUMTYPE), or the `timeout` deadline killed the run",
  ],
  111: ["child-compute-failed", "a burn child failed during compute (ECONNREFUSED)"],
};

export function gpuBurnExitMeaning(code: number): ExitMeaning<GpuBurnExitKind> {
  const known = GPU_BURN[code];
  if (known) return { code, kind: known[0], meaning: known[1] };
  return (
    signalMeaning(code, "signal" as const) ?? {
      code,
      kind: "unknown",
      meaning: "not a gpu-burn status",
    }
  );
}
