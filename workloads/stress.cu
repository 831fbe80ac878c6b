// slicecheck stress: keeps every SM of the device busy with FP32 FMAs whose results are known
// in advance, and reports the achieved TFLOP/s and the number of wrong results.
//
// Why this kernel: each pair (u, v) is advanced by two FMAs, u += c*v then v += d*u, with
// c = 0.75 and d = -4. That is the matrix [[1, c], [d, 1 + c*d]] = [[1, 0.75], [-4, -2]], whose
// cube is the identity, so after any multiple of 3 steps the pair is back at its start value.
// Start values are small integers and c has two significant bits, so every intermediate value
// is a multiple of 1/4 below 2^15: exactly representable, no rounding anywhere, and the answer
// is known without a reference computation. Any bit the hardware gets wrong (or any other
// tenant's kernel writes into our registers) shows up as a mismatch. c and d arrive as kernel
// arguments, so the compiler cannot fold the loop away.
//
//   stress [--duration S] [--interval S] [--plant-error]
//
// Lines (see slicecheck.cuh): one device header, then `SLICECHECK stress t= tflops= errors=`
// every interval (tflops over that interval, errors counted since the start) and one
// `SLICECHECK stress-final` (tflops over the whole run; iterations = checked kernel launches).
// Exit: 0 no wrong result, 1 wrong results, 2 CUDA error, 3 bad usage. SIGTERM/SIGINT end the
// run early at the next launch boundary, with the final line, then a `SLICECHECK stopped` line
// and exit 128 + the signal: a run cut short is never a pass.
#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: stress [--duration S] [--interval S] [--plant-error]\n"
    "  --duration S    run for S seconds (default 10)\n"
    "  --interval S    print a progress line every S seconds (default 1)\n"
    "  --plant-error   corrupt one result on purpose, to prove the check can fail\n";

// Independent chains per thread: enough instruction-level parallelism to cover the FMA latency.
constexpr int kChains = 8;
constexpr int kThreads = 256;
// FLOPs per thread per loop iteration: 3 steps x 2 FMAs x 2 FLOPs x kChains.
constexpr double kFlopsPerIteration = 3.0 * 2.0 * 2.0 * kChains;
// Each launch should last about this long: short enough that SIGTERM and the interval lines
// are timely, long enough that launch overhead is noise.
constexpr double kTargetLaunchS = 0.025;

__device__ __forceinline__ float start_u(unsigned gid, int j) {
  return static_cast<float>(static_cast<int>((gid * 7u + j * 131u) & 1023u) - 512);
}
__device__ __forceinline__ float start_v(unsigned gid, int j) {
  return static_cast<float>(static_cast<int>((gid * 13u + j * 37u) & 511u) - 256);
}

__global__ void __launch_bounds__(kThreads)
    fma_cycles(unsigned iterations, float c, float d, unsigned long long plant,
               unsigned long long* errors) {
  const unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  float u[kChains], v[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) {
    u[j] = start_u(gid, j);
    v[j] = start_v(gid, j);
  }
  for (unsigned i = 0; i < iterations; ++i) {
#pragma unroll
    for (int step = 0; step < 3; ++step) {
#pragma unroll
      for (int j = 0; j < kChains; ++j) {
        u[j] = fmaf(c, v[j], u[j]);
        v[j] = fmaf(d, u[j], v[j]);
      }
    }
  }
  // The planted error flips a result the way a bad bit would, after the work, before the check.
  if (gid == plant) u[0] += 1.0f;
  unsigned wrong = 0;
#pragma unroll
  for (int j = 0; j < kChains; ++j)
    wrong += (u[j] != start_u(gid, j) || v[j] != start_v(gid, j)) ? 1u : 0u;
  if (wrong != 0) atomicAdd(errors, static_cast<unsigned long long>(wrong));
}

struct Launch {
  int blocks;
  unsigned iterations;
  unsigned long long* errors;  // device counter, cumulative over the run
};

// One launch, waited for. Returns the launch's FLOPs.
static double run_once(const Launch& l, unsigned long long plant) {
  fma_cycles<<<l.blocks, kThreads>>>(l.iterations, 0.75f, -4.0f, plant, l.errors);
  SC_CHECK(cudaGetLastError());
  SC_CHECK(cudaDeviceSynchronize());
  return kFlopsPerIteration * l.iterations * static_cast<double>(l.blocks) * kThreads;
}

int main(int argc, char** argv) {
  sc_cli("stress", kUsage);
  ScTimedOptions opts;
  const int done = sc_timed_options(argc, argv, &opts);
  if (done >= 0) return done;
  const double duration = opts.duration, interval = opts.interval;
  const bool plant_error = opts.plant_error;
  sc_install_signals();
  cudaDeviceProp prop = sc_open_device("stress");

  Launch l;
  int per_sm = 0;
  SC_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fma_cycles, kThreads, 0));
  l.blocks = prop.multiProcessorCount * (per_sm > 0 ? per_sm : 1);
  SC_CHECK(cudaMalloc(&l.errors, sizeof *l.errors));
  SC_CHECK(cudaMemset(l.errors, 0, sizeof *l.errors));

  // Calibrate the launch length on this device (a 1g slice has 1/7 of the SMs but each SM does
  // the same work, so the clock and the SM generation decide). Not counted in the figures.
  const unsigned long long no_plant = ~0ull;
  l.iterations = 1024;
  run_once(l, no_plant);  // warm-up: module load, clocks ramping up
  for (int round = 0; round < 3; ++round) {
    double t_cal = sc_now();
    run_once(l, no_plant);
    t_cal = sc_now() - t_cal;
    double it = t_cal > 0 ? l.iterations * (kTargetLaunchS / t_cal) : 1e9;
    l.iterations = static_cast<unsigned>(it < 64 ? 64 : it > (1u << 24) ? (1u << 24) : it);
    // A measurement well above launch overhead is good enough.
    if (t_cal > kTargetLaunchS / 5) break;
  }

  unsigned long long errors = 0, launches = 0;
  double flops = 0, flops_at_last = 0;
  const double t0 = sc_now();
  double t = 0, t_last = 0, next_report = interval;
  while (!sc_stop && t < duration) {
    flops += run_once(l, plant_error && launches == 0 ? 0ull : no_plant);
    ++launches;
    SC_CHECK(cudaMemcpy(&errors, l.errors, sizeof errors, cudaMemcpyDeviceToHost));
    t = sc_now() - t0;
    if (t >= next_report) {
      sc_line(SC_FMT_STRESS, t, (flops - flops_at_last) / (t - t_last) / 1e12, errors);
      flops_at_last = flops;
      t_last = t;
      while (next_report <= t) next_report += interval;
    }
  }
  sc_line(SC_FMT_STRESS_FINAL, t > 0 ? flops / t / 1e12 : 0.0, errors, launches);
  SC_CHECK(cudaFree(l.errors));
  if (const int stopped = sc_stopped_exit("stress", t)) return stopped;
  return errors == 0 ? SC_EXIT_OK : SC_EXIT_CHECK_FAILED;
}
