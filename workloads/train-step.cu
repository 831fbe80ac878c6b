// slicecheck train-step: the shape of one data-parallel training step on every device the
// process sees: three GEMMs (forward Y = X·W, backward dX = dY·Wᵀ and dW = Xᵀ·dY) with its own
// tiled kernel (no cuBLAS: the nodes' toolkits need not ship its headers), then an all_reduce
// (sum) of the gradient dW over NCCL, loaded with dlopen (nccl_dl.cuh). It reports the time of
// each step and of its two halves, and checks every result.
//
//   train-step [--duration S] [--steps N] [--size N] [--plant-error]
//
// Devices: with CUDA_VISIBLE_DEVICES=MIG-<uuid> that is one device, so the all_reduce is a
// 1-rank collective (NCCL still runs it through its own kernels; it moves no data over any
// link): ranks=1 in the final line says so. With several whole GPUs visible, ncclCommInitAll
// makes one rank per GPU in this process and the all_reduce crosses NVLink or PCIe.
//
// Why the results are exact: X, W and dY hold -1, 0 or 1 (a hash of the index), rank r's dY is
// scaled by r + 1, so every product sum is an integer below 2^24 for --size up to 4096 and 8
// ranks, and FP32 represents it exactly whatever the summation order. After each step a check
// kernel recomputes 1024 sampled entries of Y, dX and the reduced dW from the generators (not
// from the buffers, so a corrupted input shows too) and counts mismatches.
//
// Lines (see slicecheck.cuh): the device header (device 0), then one `SLICECHECK train` per
// step (step_ms = compute_ms + allreduce_ms, host wall time around each half, the check not
// counted), one `SLICECHECK train-final` (steps after one warm-up step; mean and median step
// time, steps per second, ranks, wrong results). When NCCL cannot be loaded, before any CUDA
// call: one `SLICECHECK train-no-nccl reason=...` line and exit SC_EXIT_NO_NCCL (4): nothing was
// measured, which is neither a pass nor a failure of the devices.
// Exit: 0 all results right, 1 wrong results, 2 a CUDA or NCCL error, 3 bad usage, 4 no NCCL;
// SIGTERM/SIGINT end the run at the next step with the final line, then `SLICECHECK stopped`
// and 128 + the signal.
#include <algorithm>
#include <vector>

#include "nccl_dl.cuh"
#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: train-step [--duration S] [--steps N] [--size N] [--plant-error]\n"
    "  --duration S    run for S seconds (default 10, or until --steps when only it is given)\n"
    "  --steps N       stop after N measured steps\n"
    "  --size N        matrix size N x N, a multiple of 64 up to 4096 (default: from the\n"
    "                  device memory, 4096 where it fits)\n"
    "  --plant-error   corrupt one gradient after the all_reduce, to prove the check can fail\n";

constexpr int kTile = 16;
constexpr int kMaxSize = 4096;
constexpr int kMaxRanks = 8;
constexpr int kSamples = 1024;

// The inputs: -1, 0 or 1 from a hash of (matrix, row, column).
__host__ __device__ __forceinline__ float gen(unsigned m, unsigned i, unsigned j) {
  unsigned h = (i * 73856093u) ^ (j * 19349663u) ^ (m * 83492791u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return static_cast<float>(static_cast<int>(h % 3u) - 1);
}
enum { kX = 1, kW = 2, kDY = 3 };

__global__ void fill(float* p, int n, unsigned m, float scale) {
  for (long long k = blockIdx.x * 1ll * blockDim.x + threadIdx.x; k < 1ll * n * n;
       k += 1ll * gridDim.x * blockDim.x)
    p[k] = scale * gen(m, static_cast<unsigned>(k / n), static_cast<unsigned>(k % n));
}

// C = op(A)·op(B), all n x n row-major; op(A)(i,k) = A[i*ar + k*ac], so a transpose is a swap
// of the strides. Classic shared-memory tiling: each block computes one 16 x 16 tile of C.
__global__ void __launch_bounds__(kTile* kTile)
    gemm(const float* A, int ar, int ac, const float* B, int br, int bc, float* C, int n) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    as[ty][tx] = A[1ll * row * ar + 1ll * (k0 + tx) * ac];
    bs[ty][tx] = B[1ll * (k0 + ty) * br + 1ll * col * bc];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc = fmaf(as[ty][k], bs[k][tx], acc);
    __syncthreads();
  }
  C[1ll * row * n + col] = acc;
}

// Sampled entries of Y = X·W, dX = dY·Wᵀ (this rank's dY, scaled by r + 1) and the reduced
// dW = Σ_r (r + 1)·Xᵀ·dY, recomputed from the generators.
__global__ void check(const float* Y, const float* dX, const float* dW, int n, float rankScale,
                     float sumScale, unsigned seed, unsigned long long* errors) {
  const unsigned s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= kSamples) return;
  // Sample 0 is entry (0, 0), where --plant-error writes; the others move with the seed.
  const unsigned h = s == 0 ? 0u : ((s + 1u) * 2654435761u ^ seed);
  const unsigned i = h % static_cast<unsigned>(n), j = (h >> 12) % static_cast<unsigned>(n);
  float y = 0.f, dx = 0.f, dw = 0.f;
  for (unsigned k = 0; k < static_cast<unsigned>(n); ++k) {
    y += gen(kX, i, k) * gen(kW, k, j);
    dx += gen(kDY, i, k) * gen(kW, j, k);
    dw += gen(kX, k, i) * gen(kDY, k, j);
  }
  unsigned wrong = (Y[1ll * i * n + j] != y) + (dX[1ll * i * n + j] != rankScale * dx) +
                   (dW[1ll * i * n + j] != sumScale * dw);
  if (wrong) atomicAdd(errors, static_cast<unsigned long long>(wrong));
}

__global__ void plant(float* p) { p[0] += 1.f; }

struct Rank {
  int device;
  cudaStream_t stream;
  float *x, *w, *dy, *y, *dx, *dw;
  unsigned long long* errors;
};

static ScNccl nccl;

static void nccl_check(scNcclResult_t r, const char* what, int line) {
  if (r == 0) return;
  fflush(stdout);
  fprintf(stderr, "NCCL error: %s (%d from %s at train-step.cu:%d)\n", nccl.getErrorString(r), r,
          what, line);
  exit(SC_EXIT_CUDA);
}
#define NCCL_CHECK(call) nccl_check((call), #call, __LINE__)

static void setup(Rank& r, int n, int rank) {
  SC_CHECK(cudaSetDevice(r.device));
  SC_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
  const size_t bytes = sizeof(float) * n * n;
  for (float** p : {&r.x, &r.w, &r.dy, &r.y, &r.dx, &r.dw}) SC_CHECK(cudaMalloc(p, bytes));
  SC_CHECK(cudaMalloc(&r.errors, sizeof *r.errors));
  SC_CHECK(cudaMemsetAsync(r.errors, 0, sizeof *r.errors, r.stream));
  fill<<<1024, 256, 0, r.stream>>>(r.x, n, kX, 1.f);
  fill<<<1024, 256, 0, r.stream>>>(r.w, n, kW, 1.f);
  fill<<<1024, 256, 0, r.stream>>>(r.dy, n, kDY, static_cast<float>(rank + 1));
  SC_CHECK(cudaGetLastError());
  SC_CHECK(cudaStreamSynchronize(r.stream));
}

static void sync_all(std::vector<Rank>& ranks) {
  for (Rank& r : ranks) {
    SC_CHECK(cudaSetDevice(r.device));
    SC_CHECK(cudaStreamSynchronize(r.stream));
  }
}

// One step: the GEMMs on every rank, then the all_reduce; the host time of each half.
static void step(std::vector<Rank>& ranks, std::vector<scNcclComm_t>& comms, int n, double* cms,
                 double* ams) {
  const dim3 block(kTile, kTile), grid(n / kTile, n / kTile);
  double t0 = sc_now();
  for (Rank& r : ranks) {
    SC_CHECK(cudaSetDevice(r.device));
    gemm<<<grid, block, 0, r.stream>>>(r.x, n, 1, r.w, n, 1, r.y, n);    // Y = X·W
    gemm<<<grid, block, 0, r.stream>>>(r.dy, n, 1, r.w, 1, n, r.dx, n);  // dX = dY·Wᵀ
    gemm<<<grid, block, 0, r.stream>>>(r.x, 1, n, r.dy, n, 1, r.dw, n);  // dW = Xᵀ·dY
    SC_CHECK(cudaGetLastError());
  }
  sync_all(ranks);
  double t1 = sc_now();
  NCCL_CHECK(nccl.groupStart());
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& r = ranks[k];
    SC_CHECK(cudaSetDevice(r.device));
    NCCL_CHECK(nccl.allReduce(r.dw, r.dw, static_cast<size_t>(n) * n, SC_NCCL_FLOAT32, SC_NCCL_SUM,
                              comms[k], r.stream));
  }
  NCCL_CHECK(nccl.groupEnd());
  sync_all(ranks);
  double t2 = sc_now();
  *cms = (t1 - t0) * 1e3;
  *ams = (t2 - t1) * 1e3;
}

static unsigned long long check_all(std::vector<Rank>& ranks, int n, unsigned seed, bool corrupt) {
  const int nr = static_cast<int>(ranks.size());
  const float sum = static_cast<float>(nr * (nr + 1) / 2);
  unsigned long long total = 0;
  for (int k = 0; k < nr; ++k) {
    Rank& r = ranks[k];
    SC_CHECK(cudaSetDevice(r.device));
    if (corrupt && k == 0) plant<<<1, 1, 0, r.stream>>>(r.dw);
    check<<<kSamples / 256, 256, 0, r.stream>>>(r.y, r.dx, r.dw, n, static_cast<float>(k + 1), sum,
                                                seed, r.errors);
    SC_CHECK(cudaGetLastError());
    unsigned long long e = 0;
    SC_CHECK(cudaMemcpyAsync(&e, r.errors, sizeof e, cudaMemcpyDeviceToHost, r.stream));
    SC_CHECK(cudaStreamSynchronize(r.stream));
    total += e;
  }
  return total;
}

// The largest size (a multiple of 64, at most 4096) whose six matrices take at most an eighth of
// the smallest device's memory: a 1g slice and a whole GPU both keep most of it for the tenant.
static int size_for(unsigned long long memory) {
  int n = kMaxSize;
  while (n > 64 && 6ull * sizeof(float) * n * n > memory / 8) n -= 64;
  return n;
}

struct Options {
  double duration = 10;
  bool durationGiven = false;
  unsigned long long steps = 0;
  int size = 0;
  bool plantError = false;
};

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* v = nullptr;
    double d = 0;
    if (sc_is_help(argv[i])) {
      fputs(kUsage, stdout);
      exit(SC_EXIT_OK);
    } else if ((v = sc_option(argc, argv, &i, "--duration"))) {
      if (!sc_parse_double(v, &o.duration) || o.duration <= 0)
        sc_usage_error("--duration needs seconds > 0, got", v);
      o.durationGiven = true;
    } else if ((v = sc_option(argc, argv, &i, "--steps"))) {
      if (!sc_parse_double(v, &d) || d < 1 || d > 1e9 ||
          d != static_cast<double>(static_cast<long long>(d)))
        sc_usage_error("--steps needs a whole number >= 1, got", v);
      o.steps = static_cast<unsigned long long>(d);
    } else if ((v = sc_option(argc, argv, &i, "--size"))) {
      if (!sc_parse_double(v, &d) || d < 64 || d > kMaxSize || static_cast<int>(d) % 64 != 0 ||
          d != static_cast<double>(static_cast<int>(d)))
        sc_usage_error("--size needs a multiple of 64 from 64 to 4096, got", v);
      o.size = static_cast<int>(d);
    } else if (strcmp(argv[i], "--plant-error") == 0) {
      o.plantError = true;
    } else {
      sc_usage_error("unknown argument", argv[i]);
    }
  }
  // --steps alone runs exactly that many steps; with --duration too, whichever comes first.
  if (o.steps > 0 && !o.durationGiven) o.duration = 1e12;
  return o;
}

int main(int argc, char** argv) {
  sc_cli("train-step", kUsage);
  const Options o = parse(argc, argv);
  sc_install_signals();
  // NCCL first, before any CUDA call: a node without it is told in one line, not after a build
  // and a warm-up.
  char why[512];
  if (!scNcclLoad(&nccl, why, sizeof why)) {
    sc_line(SC_FMT_TRAIN_NO_NCCL, why);
    return SC_EXIT_NO_NCCL;
  }
  cudaDeviceProp prop = sc_open_device("train-step");
  int count = 0;
  SC_CHECK(cudaGetDeviceCount(&count));
  count = std::min(count, kMaxRanks);
  unsigned long long memory = prop.totalGlobalMem;
  std::vector<Rank> ranks(count);
  std::vector<int> devices(count);
  for (int d = 0; d < count; ++d) {
    ranks[d].device = devices[d] = d;
    if (d == 0) continue;
    SC_CHECK(cudaSetDevice(d));
    SC_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    cudaDeviceProp p;
    SC_CHECK(cudaGetDeviceProperties(&p, d));
    memory = std::min(memory, static_cast<unsigned long long>(p.totalGlobalMem));
  }
  const int n = o.size > 0 ? o.size : size_for(memory);
  for (int d = 0; d < count; ++d) setup(ranks[d], n, d);
  std::vector<scNcclComm_t> comms(count);
  NCCL_CHECK(nccl.commInitAll(comms.data(), count, devices.data()));

  double cms = 0, ams = 0;
  step(ranks, comms, n, &cms, &ams);  // warm-up: module load, NCCL's first collective
  unsigned long long errors = check_all(ranks, n, 0x9e3779b9u, false);
  std::vector<double> times;
  const double t0 = sc_now();
  double t = 0;
  while (!sc_stop && t < o.duration && (o.steps == 0 || times.size() < o.steps)) {
    step(ranks, comms, n, &cms, &ams);
    times.push_back(cms + ams);
    const bool corrupt = o.plantError && times.size() == 1;
    errors = check_all(ranks, n, static_cast<unsigned>(times.size()) * 0x9e3779b9u, corrupt);
    sc_line(SC_FMT_TRAIN, static_cast<unsigned long long>(times.size()), cms + ams, cms, ams);
    t = sc_now() - t0;
  }
  double mean = 0, p50 = 0;
  if (!times.empty()) {
    for (double x : times) mean += x;
    mean /= static_cast<double>(times.size());
    std::vector<double> sorted(times);
    std::sort(sorted.begin(), sorted.end());
    const size_t m = sorted.size() / 2;
    p50 = sorted.size() % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
  }
  sc_line(SC_FMT_TRAIN_FINAL, static_cast<unsigned long long>(times.size()), count, mean, p50,
          t > 0 ? static_cast<double>(times.size()) / t : 0.0, errors);
  for (scNcclComm_t c : comms) nccl.commDestroy(c);
  if (const int stopped = sc_stopped_exit("train-step", t)) return stopped;
  return errors == 0 ? SC_EXIT_OK : SC_EXIT_CHECK_FAILED;
}
