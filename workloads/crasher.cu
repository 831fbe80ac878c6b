// slicecheck crasher: faults on purpose inside one device (one MIG instance), so the harness can
// check that the fault stays there: the other instances keep running and the driver logs the
// Xid against this instance only.
//
//   crasher --mode illegal-address|trap|hang|sigkill [--after S]
//
//   illegal-address  a kernel stores through a wild pointer: the MMU faults, the runtime returns
//                    cudaErrorIllegalAddress (700, "an illegal memory access was encountered"),
//                    the context is lost; the driver logs Xid 31 (MMU fault), and 13 or 43 on
//                    some GPUs and drivers.
//   trap             a kernel executes __trap(): cudaErrorLaunchFailure (719, "unspecified launch
//                    failure"); the driver logs Xid 13 (graphics exception) or 43.
//   hang             a kernel that never finishes; only the deadline (timeout, kill) ends it.
//   sigkill          raise(SIGKILL) on itself while a kernel runs: the driver must tear down a
//                    context whose owner vanished mid-kernel.
//
// --after S waits S seconds with the context up before acting (default 0; 1 for sigkill, whose
// kernel is already running during the wait), so victims see a live neighbour first.
// Lines: the device header, then `SLICECHECK crasher mode=<mode> armed` right before the fault.
// Exit: 2 with "CUDA error: ..." on stderr when the fault came as expected (illegal-address,
// trap); killed by the deadline (hang) or by SIGKILL (sigkill, 137 in a shell); 1 when the fault
// did not happen; 3 bad usage.
#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: crasher --mode illegal-address|trap|hang|sigkill [--after S]\n"
    "  --mode M    the fault to cause (see the comment at the top of crasher.cu)\n"
    "  --after S   seconds to wait before acting (default 0; sigkill: 1, with a kernel running)\n";

static const char* const kModes[] = {"illegal-address", "trap", "hang", "sigkill"};

// The pointer comes from the host as a kernel argument, so the compiler cannot see that it is
// bad (a literal null store may be compiled into a trap instead of a memory access).
__global__ void store_wild(int* wild) { *wild = 0x5c; }

__global__ void trap_now() { __trap(); }

// Spins until *release is non-zero, which nobody ever sets. volatile: re-read on every turn.
__global__ void spin_forever(const volatile int* release) {
  while (*release == 0) {
#if __CUDA_ARCH__ >= 700
    __nanosleep(10000);  // keeps the SM resident without burning power
#endif
  }
}

int main(int argc, char** argv) {
  const char* mode = nullptr;
  double after = -1;
  sc_cli("crasher", kUsage);
  for (int i = 1; i < argc; ++i) {
    const char* v = nullptr;
    if (sc_is_help(argv[i])) {
      fputs(kUsage, stdout);
      return SC_EXIT_OK;
    } else if ((v = sc_option(argc, argv, &i, "--mode"))) {
      mode = nullptr;
      for (const char* m : kModes)
        if (strcmp(m, v) == 0) mode = m;
      if (mode == nullptr) sc_usage_error("unknown mode", v);
    } else if ((v = sc_option(argc, argv, &i, "--after"))) {
      if (!sc_parse_double(v, &after) || after < 0)
        sc_usage_error("--after needs seconds >= 0, got", v);
    } else {
      sc_usage_error("unknown argument", argv[i]);
    }
  }
  if (mode == nullptr) sc_usage_error("--mode is required", nullptr);
  const bool sigkill = strcmp(mode, "sigkill") == 0;
  if (after < 0) after = sigkill ? 1 : 0;
  // No SIGTERM handler: a crasher stopped by the deadline should die as any process would.
  cudaDeviceProp prop = sc_open_device("crasher");

  int* release = nullptr;
  SC_CHECK(cudaMalloc(&release, sizeof *release));
  SC_CHECK(cudaMemset(release, 0, sizeof *release));
  SC_CHECK(cudaDeviceSynchronize());

  if (sigkill) {
    // One spinning block per SM: the whole device is busy when the process dies.
    spin_forever<<<prop.multiProcessorCount, 32>>>(release);
    SC_CHECK(cudaGetLastError());
  }
  if (after > 0) {
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(after);
    ts.tv_nsec = static_cast<long>((after - static_cast<double>(ts.tv_sec)) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }

  sc_line(SC_FMT_CRASHER, mode);
  if (sigkill) {
    raise(SIGKILL);
  } else if (strcmp(mode, "illegal-address") == 0) {
    // Page 16 of the address space: never mapped in a CUDA context.
    volatile unsigned long long wild = 0x10000;
    store_wild<<<1, 1>>>(reinterpret_cast<int*>(static_cast<unsigned long long>(wild)));
  } else if (strcmp(mode, "trap") == 0) {
    trap_now<<<1, 1>>>();
  } else {
    spin_forever<<<prop.multiProcessorCount, 32>>>(release);
  }
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) sc_cuda_fail(err, "the armed kernel", __FILE__, __LINE__);
  fprintf(stderr, "crasher: mode=%s armed, but no fault happened\n", mode);
  return SC_EXIT_CHECK_FAILED;
}
