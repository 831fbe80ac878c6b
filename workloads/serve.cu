// slicecheck serve: an inference-like request loop. Each request is one small batched GEMM
// (C[b] = A[b] x B for every matrix b of the batch), submitted and waited for on its own, the way
// a serving process answers one batch of requests at a time. It reports the latency of each
// request (p50, p99) and the requests per second, and checks every answer.
//
// Sizes: the batch is two matrices per SM (one wave of tiles keeps each SM busy without
// queueing a second wave), the matrices 128 x 128 (64 x 64 below 4 GiB of device memory, the
// smallest MIG slices), and all buffers together stay under 1/16 of the device's memory, so the
// request is "small" on every profile: a fraction of a millisecond of work, latency-bound.
// No cuBLAS: the toolkit on the build machine (and many nodes) has no cublas headers, and a
// tiled shared-memory kernel is enough to make the request's time depend on the SMs it gets.
//
// Known answer: A and B hold small integers (|a| <= 3, |b| <= 2), so every product and every
// partial sum (at most 128 * 6 in magnitude) is exact in FP32 whatever the order of summation;
// the check kernel recomputes each element in integers and counts mismatches. C is overwritten
// with a sentinel before each request, so a request that wrote nothing cannot pass on the
// previous answer.
//
// Latency is the host's clock from submission to completion (cudaEventSynchronize on the
// request's end event): a request that waits for its time slice behind another process's kernel
// (time-slicing, MPS) waits in the client's view, and GPU-side event timing alone would not
// show that wait. The request's end event is what the host waits on.
//
//   serve [--duration S] [--interval S] [--plant-error]
//
// Lines (see slicecheck.cuh): the device header, `SLICECHECK serve t= p50_ms= p99_ms= rps=
// errors=` every interval (percentiles and rate over that interval, errors since the start) and
// one `SLICECHECK serve-final` over the whole run. Exit: 0 all answers right, 1 wrong answers,
// 2 CUDA error, 3 bad usage; SIGTERM/SIGINT: final line, `stopped` line, exit 128 + signal.
#include <algorithm>
#include <vector>

#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: serve [--duration S] [--interval S] [--plant-error]\n"
    "  --duration S    run for S seconds (default 10)\n"
    "  --interval S    print a progress line every S seconds (default 1)\n"
    "  --plant-error   corrupt one answer on purpose, to prove the check can fail\n";

constexpr int kTile = 16;
// Latencies kept for the final percentiles: 16 M floats (64 MiB) is hours of requests.
constexpr size_t kMaxKept = size_t(1) << 24;

__device__ __host__ __forceinline__ int a_at(int b, int i, int k) { return (i + 2 * k + b) % 7 - 3; }
__device__ __host__ __forceinline__ int b_at(int k, int j) { return (3 * k + j) % 5 - 2; }

__global__ void fill(float* a, float* bm, int n, int batch) {
  const size_t total = size_t(batch) * n * n;
  for (size_t x = blockIdx.x * size_t(blockDim.x) + threadIdx.x; x < total;
       x += size_t(gridDim.x) * blockDim.x) {
    int b = int(x / (size_t(n) * n)), i = int(x / n % n), k = int(x % n);
    a[x] = float(a_at(b, i, k));
    if (b == 0) bm[x] = float(b_at(i, k));
  }
}

// C[b] = A[b] x B, tiled through shared memory; grid (n/kTile, n/kTile, batch).
__global__ void __launch_bounds__(kTile* kTile)
    gemm(const float* a, const float* bm, float* c, int n) {
  __shared__ float as[kTile][kTile], bs[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  const float* ab = a + size_t(blockIdx.z) * n * n;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    as[threadIdx.y][threadIdx.x] = ab[size_t(row) * n + k0 + threadIdx.x];
    bs[threadIdx.y][threadIdx.x] = bm[size_t(k0 + threadIdx.y) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc = fmaf(as[threadIdx.y][k], bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[size_t(blockIdx.z) * n * n + size_t(row) * n + col] = acc;
}

// Counts wrong elements of C; `plant` (an element index, or ~0) is miscounted on purpose the
// way a flipped result would be, after the request, before the check.
__global__ void check(const float* c, int n, int batch, unsigned long long plant,
                      unsigned long long* errors) {
  const size_t total = size_t(batch) * n * n;
  unsigned long long wrong = 0;
  for (size_t x = blockIdx.x * size_t(blockDim.x) + threadIdx.x; x < total;
       x += size_t(gridDim.x) * blockDim.x) {
    int b = int(x / (size_t(n) * n)), i = int(x / n % n), j = int(x % n);
    int want = 0;
    for (int k = 0; k < n; ++k) want += a_at(b, i, k) * b_at(k, j);
    float got = c[x] + (x == plant ? 1.0f : 0.0f);
    if (got != float(want)) ++wrong;
  }
  if (wrong) atomicAdd(errors, wrong);
}

struct Shape {
  int n, batch;
};

// Two matrices per SM, 128 x 128 (64 x 64 under 4 GiB), buffers under 1/16 of the memory.
static Shape shape_of(const cudaDeviceProp& prop) {
  Shape s;
  s.n = prop.totalGlobalMem >= (4ull << 30) ? 128 : 64;
  s.batch = 2 * (prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1);
  const size_t per = 2 * sizeof(float) * size_t(s.n) * s.n;  // A[b] and C[b]
  const size_t cap = prop.totalGlobalMem / 16;
  if (per * s.batch > cap) s.batch = int(std::max<size_t>(1, cap / per));
  return s;
}

// The q-quantile (0..1) of xs, nearest rank; xs is reordered.
static double quantile(std::vector<float>& xs, double q) {
  if (xs.empty()) return 0.0;
  size_t k = size_t(q * double(xs.size() - 1) + 0.5);
  std::nth_element(xs.begin(), xs.begin() + k, xs.end());
  return xs[k];
}

struct Buffers {
  float *a, *b, *c;
  unsigned long long* errors;
  cudaEvent_t start, stop;
};

// One request: sentinel, submit, wait; then its check. Returns the host-side latency in ms.
static double request(const Buffers& m, const Shape& s, unsigned long long plant) {
  const size_t elems = size_t(s.batch) * s.n * s.n;
  SC_CHECK(cudaMemsetAsync(m.c, 0xc6, elems * sizeof(float)));  // 0xc6c6c6c6: a sentinel
  SC_CHECK(cudaDeviceSynchronize());
  const double t0 = sc_now();
  SC_CHECK(cudaEventRecord(m.start));
  gemm<<<dim3(s.n / kTile, s.n / kTile, s.batch), dim3(kTile, kTile)>>>(m.a, m.b, m.c, s.n);
  SC_CHECK(cudaGetLastError());
  SC_CHECK(cudaEventRecord(m.stop));
  SC_CHECK(cudaEventSynchronize(m.stop));
  const double ms = (sc_now() - t0) * 1e3;
  check<<<256, 256>>>(m.c, s.n, s.batch, plant, m.errors);
  SC_CHECK(cudaGetLastError());
  return ms;
}

int main(int argc, char** argv) {
  sc_cli("serve", kUsage);
  ScTimedOptions opts;
  const int done = sc_timed_options(argc, argv, &opts);
  if (done >= 0) return done;
  const double duration = opts.duration, interval = opts.interval;
  const bool plant_error = opts.plant_error;
  sc_install_signals();
  const cudaDeviceProp prop = sc_open_device("serve");
  const Shape s = shape_of(prop);
  Buffers m;
  const size_t elems = size_t(s.batch) * s.n * s.n;
  SC_CHECK(cudaMalloc(&m.a, elems * sizeof(float)));
  SC_CHECK(cudaMalloc(&m.b, size_t(s.n) * s.n * sizeof(float)));
  SC_CHECK(cudaMalloc(&m.c, elems * sizeof(float)));
  SC_CHECK(cudaMalloc(&m.errors, sizeof *m.errors));
  SC_CHECK(cudaMemset(m.errors, 0, sizeof *m.errors));
  SC_CHECK(cudaEventCreate(&m.start));
  SC_CHECK(cudaEventCreate(&m.stop));
  fill<<<256, 256>>>(m.a, m.b, s.n, s.batch);
  SC_CHECK(cudaGetLastError());
  const unsigned long long no_plant = ~0ull;
  request(m, s, no_plant);  // warm-up: module load, clocks; not counted
  SC_CHECK(cudaDeviceSynchronize());

  std::vector<float> all, window;
  all.reserve(1 << 16);
  unsigned long long errors = 0, requests = 0;
  const double t0 = sc_now();
  double t = 0, t_last = 0, next_report = interval;
  while (!sc_stop && t < duration) {
    const float ms = float(request(m, s, plant_error && requests == 0 ? 0ull : no_plant));
    ++requests;
    window.push_back(ms);
    if (all.size() < kMaxKept) all.push_back(ms);
    t = sc_now() - t0;
    if (t >= next_report) {
      SC_CHECK(cudaMemcpy(&errors, m.errors, sizeof errors, cudaMemcpyDeviceToHost));
      const double rps = double(window.size()) / (t - t_last);
      const double p50 = quantile(window, 0.5), p99 = quantile(window, 0.99);
      sc_line(SC_FMT_SERVE, t, p50, p99, rps, errors);
      window.clear();
      t_last = t;
      while (next_report <= t) next_report += interval;
    }
  }
  SC_CHECK(cudaMemcpy(&errors, m.errors, sizeof errors, cudaMemcpyDeviceToHost));
  const double p50 = quantile(all, 0.5), p99 = quantile(all, 0.99);
  sc_line(SC_FMT_SERVE_FINAL, p50, p99, t > 0 ? double(requests) / t : 0.0, errors, requests);
  SC_CHECK(cudaEventDestroy(m.start));
  SC_CHECK(cudaEventDestroy(m.stop));
  SC_CHECK(cudaFree(m.a));
  SC_CHECK(cudaFree(m.b));
  SC_CHECK(cudaFree(m.c));
  SC_CHECK(cudaFree(m.errors));
  if (const int stopped = sc_stopped_exit("serve", t)) return stopped;
  return errors == 0 ? SC_EXIT_OK : SC_EXIT_CHECK_FAILED;
}
