// slicecheck memhog: takes device memory and holds it (the out-of-memory aggressor), and checks
// that a given amount is still allocatable and keeps what is written to it (the victim side).
//
//   memhog [--bytes N | --fraction F] [--hold S] [--check N] [--interval S] [--chunk N]
//
// Without --bytes or --fraction it allocates until out of memory. Memory is taken in chunks of
// cudaMalloc (256 MiB by default); when one fails the chunk is halved down to 2 MiB, so the
// process ends up holding nearly everything there was. Every chunk is written (cudaMemset), so
// the memory is really in use, not just reserved. N takes a K, M, G or T suffix (binary).
//
// Lines (see slicecheck.cuh): the device header, then one `SLICECHECK memhog` (requested_bytes
// is the target, or the device's total memory when allocating until OOM; oom=1 when an
// allocation failed before the target was reached), then one `SLICECHECK memhog-check` per
// check: after allocating, then every --interval S while holding. A check allocates N
// bytes, writes a pattern, reads it back on the device and frees it: ok=0 when the allocation
// failed or a word came back wrong. The memory is held for --hold S (SIGTERM ends the hold,
// with a `SLICECHECK stopped` line and exit 128 + the signal).
// Exit: 0 ok (allocating until OOM ends at OOM by design: still 0); 2 when --bytes/--fraction
// could not be reached (with "CUDA error: out of memory" on stderr, after holding what it got:
// an aggressor keeps the pressure on) or on any other CUDA error; 1 a check failed; 3 bad usage.
#include <algorithm>
#include <vector>

#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: memhog [--bytes N | --fraction F] [--hold S] [--check N] [--interval S] [--chunk N]\n"
    "  --bytes N            allocate N bytes (suffix K, M, G, T: binary)\n"
    "  --fraction F         allocate F (0 < F <= 1) of the memory free at start\n"
    "                       (neither: allocate until out of memory)\n"
    "  --hold S             hold the memory for S seconds before freeing it (default 0)\n"
    "  --check N            after allocating, check that N more bytes can be allocated,\n"
    "                       written and read back\n"
    "  --interval S         repeat the check every S seconds while holding\n"
    "  --chunk N            cudaMalloc chunk size (default 256M)\n";

constexpr unsigned long long kMinChunk = 2ull << 20;

// The pattern depends on the word's index and on a per-check seed, so a stale buffer from an
// earlier check (or another process's data) cannot pass.
__device__ __forceinline__ unsigned pattern(unsigned long long i, unsigned seed) {
  return static_cast<unsigned>(i * 2654435761ull) ^ seed;
}

__global__ void fill(unsigned* p, unsigned long long n, unsigned seed) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    p[i] = pattern(i, seed);
}

__global__ void verify(const unsigned* p, unsigned long long n, unsigned seed,
                       unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    mine += p[i] != pattern(i, seed) ? 1 : 0;
  if (mine != 0) atomicAdd(wrong, mine);
}

// cudaMalloc, with out-of-memory turned into a `false` (and cleared: it is not a sticky error)
// and every other error fatal.
static bool try_malloc(void** p, unsigned long long bytes) {
  cudaError_t err = cudaMalloc(p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    *p = nullptr;
    return false;
  }
  SC_CHECK(err);
  return true;
}

static bool check(unsigned long long bytes, int sms, unsigned seed) {
  // The 8-byte counter first, so that the N bytes asked about are what decides the outcome.
  unsigned long long* wrong = nullptr;
  void* p = nullptr;
  bool ok = try_malloc(reinterpret_cast<void**>(&wrong), sizeof *wrong) && try_malloc(&p, bytes);
  if (ok) {
    const unsigned long long words = bytes / sizeof(unsigned);
    SC_CHECK(cudaMemset(wrong, 0, sizeof *wrong));
    fill<<<sms * 4, 256>>>(static_cast<unsigned*>(p), words, seed);
    SC_CHECK(cudaGetLastError());
    verify<<<sms * 4, 256>>>(static_cast<const unsigned*>(p), words, seed, wrong);
    SC_CHECK(cudaGetLastError());
    unsigned long long host_wrong = 0;
    SC_CHECK(cudaMemcpy(&host_wrong, wrong, sizeof host_wrong, cudaMemcpyDeviceToHost));
    ok = host_wrong == 0;
    if (!ok)
      fprintf(stderr, "memhog: check: %llu of %llu words read back wrong\n", host_wrong, words);
  }
  if (p != nullptr) SC_CHECK(cudaFree(p));
  if (wrong != nullptr) SC_CHECK(cudaFree(wrong));
  sc_line(SC_FMT_MEMHOG_CHECK, bytes, ok ? 1 : 0);
  return ok;
}

int main(int argc, char** argv) {
  unsigned long long bytes = 0, check_bytes = 0, chunk = 256ull << 20;
  double fraction = 0, hold = 0, check_interval = 0;
  bool have_bytes = false, have_fraction = false;
  sc_cli("memhog", kUsage);
  for (int i = 1; i < argc; ++i) {
    const char* v = nullptr;
    if (sc_is_help(argv[i])) {
      fputs(kUsage, stdout);
      return SC_EXIT_OK;
    } else if ((v = sc_option(argc, argv, &i, "--bytes"))) {
      if (!sc_parse_bytes(v, &bytes)) sc_usage_error("--bytes needs a byte count, got", v);
      have_bytes = true;
    } else if ((v = sc_option(argc, argv, &i, "--fraction"))) {
      if (!sc_parse_double(v, &fraction) || fraction <= 0 || fraction > 1)
        sc_usage_error("--fraction needs 0 < F <= 1, got", v);
      have_fraction = true;
    } else if ((v = sc_option(argc, argv, &i, "--hold"))) {
      if (!sc_parse_double(v, &hold) || hold < 0)
        sc_usage_error("--hold needs seconds >= 0, got", v);
    } else if ((v = sc_option(argc, argv, &i, "--check"))) {
      if (!sc_parse_bytes(v, &check_bytes) || check_bytes == 0)
        sc_usage_error("--check needs a byte count > 0, got", v);
    } else if ((v = sc_option(argc, argv, &i, "--interval"))) {
      if (!sc_parse_double(v, &check_interval) || check_interval <= 0)
        sc_usage_error("--interval needs seconds > 0, got", v);
    } else if ((v = sc_option(argc, argv, &i, "--chunk"))) {
      if (!sc_parse_bytes(v, &chunk) || chunk < kMinChunk)
        sc_usage_error("--chunk needs at least 2M, got", v);
    } else {
      sc_usage_error("unknown argument", argv[i]);
    }
  }
  if (have_bytes && have_fraction) sc_usage_error("give --bytes or --fraction, not both", nullptr);
  if (check_interval > 0 && check_bytes == 0) sc_usage_error("--interval needs --check", nullptr);
  sc_install_signals();
  const double t_start = sc_now();
  cudaDeviceProp prop = sc_open_device("memhog");

  size_t free_bytes = 0, total_bytes = 0;
  SC_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  sc_line("memhog: free_bytes=%llu total_bytes=%llu before allocating\n",
          static_cast<unsigned long long>(free_bytes),
          static_cast<unsigned long long>(total_bytes));
  const bool until_oom = !have_bytes && !have_fraction;
  unsigned long long target =
      have_bytes ? bytes
      : have_fraction
          ? static_cast<unsigned long long>(static_cast<double>(free_bytes) * fraction)
          : static_cast<unsigned long long>(total_bytes);

  std::vector<void*> held;
  unsigned long long allocated = 0;
  bool hit_oom = false;
  while (!sc_stop && (until_oom || allocated < target)) {
    unsigned long long size = until_oom ? chunk : std::min(chunk, target - allocated);
    void* p = nullptr;
    if (!try_malloc(&p, size)) {
      hit_oom = true;
      if (chunk <= kMinChunk) break;
      chunk /= 2;
      continue;
    }
    SC_CHECK(cudaMemset(p, 0xa5, size));
    held.push_back(p);
    allocated += size;
  }
  SC_CHECK(cudaDeviceSynchronize());
  // A SIGTERM during the allocation is not an OOM, even though the target was not reached.
  const bool oom = hit_oom && (until_oom || allocated < target);
  const bool target_missed = oom && !until_oom;
  if (target_missed)
    sc_cuda_report(cudaErrorMemoryAllocation, "cudaMalloc", __FILE__, __LINE__);
  sc_line(SC_FMT_MEMHOG, allocated, target, oom ? 1 : 0);

  bool all_ok = true;
  unsigned seed = 0x5c1cec4bu;
  if (check_bytes > 0) all_ok &= check(check_bytes, prop.multiProcessorCount, seed++);
  const double hold_end = sc_now() + hold;
  while (!sc_stop && sc_now() < hold_end) {
    double left = hold_end - sc_now();
    if (check_interval > 0 && check_interval < left) {
      if (!sc_sleep(check_interval)) break;
      all_ok &= check(check_bytes, prop.multiProcessorCount, seed++);
    } else {
      sc_sleep(left);
    }
  }
  for (void* p : held) SC_CHECK(cudaFree(p));
  if (const int stopped = sc_stopped_exit("memhog", sc_now() - t_start)) return stopped;
  if (target_missed) return SC_EXIT_CUDA;
  return all_ok ? SC_EXIT_OK : SC_EXIT_CHECK_FAILED;
}
