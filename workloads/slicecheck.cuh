// What the built-in workloads (stress.cu, memhog.cu, crasher.cu, train-step.cu, ...) share: the machine-readable
// lines, the exit codes, the CUDA error report, the device header, strict option parsing and a
// SIGTERM-aware sleep. Host-only code; each .cu includes it once.
//
// The SLICECHECK lines are a contract with src/workloads/parsers/builtin.ts: the SC_FMT_* strings
// are byte-for-byte copies of BUILTIN_PRINTF there (test/workloads/cuda-build.test.ts checks it).
// Change them there first.
#pragma once

#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#define SC_FMT_STRESS "SLICECHECK stress t=%.1f tflops=%.2f errors=%llu\n"
#define SC_FMT_STRESS_FINAL "SLICECHECK stress-final tflops=%.2f errors=%llu iterations=%llu\n"
#define SC_FMT_MEMHOG "SLICECHECK memhog allocated_bytes=%llu requested_bytes=%llu oom=%d\n"
#define SC_FMT_MEMHOG_CHECK "SLICECHECK memhog-check bytes=%llu ok=%d\n"
#define SC_FMT_CRASHER "SLICECHECK crasher mode=%s armed\n"
#define SC_FMT_SERVE "SLICECHECK serve t=%.1f p50_ms=%.3f p99_ms=%.3f rps=%.1f errors=%llu\n"
#define SC_FMT_SERVE_FINAL "SLICECHECK serve-final p50_ms=%.3f p99_ms=%.3f rps=%.1f errors=%llu requests=%llu\n"
#define SC_FMT_STOPPED "SLICECHECK stopped program=%s signal=%s t=%.1f\n"
#define SC_FMT_ALLREDUCE "SLICECHECK allreduce rank=%d nranks=%d bytes=%llu time_us=%.2f algbw=%.2f busbw=%.2f wrong=%llu\n"
// train-step.cu (parsed by src/workloads/parsers/train-step.ts, which holds TRAIN_PRINTF).
#define SC_FMT_TRAIN "SLICECHECK train step=%llu step_ms=%.3f compute_ms=%.3f allreduce_ms=%.3f\n"
#define SC_FMT_TRAIN_FINAL "SLICECHECK train-final steps=%llu ranks=%d mean_step_ms=%.3f p50_step_ms=%.3f steps_per_s=%.3f errors=%llu\n"
#define SC_FMT_TRAIN_NO_NCCL "SLICECHECK train-no-nccl reason=%s\n"

// Not (yet) a SLICECHECK record, so that builtin.ts, which refuses unknown SLICECHECK records,
// reads these outputs unchanged. The name is last because it contains spaces
// ("NVIDIA A100-SXM4-40GB MIG 1g.5gb").
#define SC_FMT_DEVICE \
  "slicecheck-device program=%s uuid=%s sms=%d cc=%d.%d memory_bytes=%llu name=%s\n"

// Exit codes, the same in all three programs. 1 means "the check this program makes failed"
// (stress: wrong results; memhog: a --check could not allocate or read back; crasher: the fault
// did not happen), so the launcher can tell it from a CUDA error (2) and from its own mistake (3).
enum {
  SC_EXIT_OK = 0,
  SC_EXIT_CHECK_FAILED = 1,
  SC_EXIT_CUDA = 2,
  SC_EXIT_USAGE = 3,
};

// Set to the signal by SIGTERM/SIGINT: `timeout` and the harness's kill script send TERM
// first, and a workload that stops at the next kernel boundary still prints its final line.
static volatile sig_atomic_t sc_stop = 0;

static inline void sc_on_signal(int sig) { sc_stop = sig; }

static inline void sc_install_signals() {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = sc_on_signal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a sleeping nanosleep() returns at once with EINTR.
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// One printf and one flush per tagged line, so a killed process leaves whole lines only.
static inline void sc_line(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fflush(stdout);
}

// A run cut short by a signal is no pass: the last line says so and the exit is 128 + the
// signal, what a shell reports for a process killed by it. Returns 0 when no signal came.
static inline int sc_stopped_exit(const char* program, double t) {
  if (!sc_stop) return 0;
  sc_line(SC_FMT_STOPPED, program, sc_stop == SIGINT ? "SIGINT" : "SIGTERM", t);
  return 128 + static_cast<int>(sc_stop);
}

// "CUDA error: <the runtime's own text>" first, as PyTorch prints it, so that
// src/workloads/parsers/cuda-errors.ts classifies it; the enum name, number and call follow.
static inline void sc_cuda_report(cudaError_t err, const char* what, const char* file, int line) {
  fflush(stdout);
  fprintf(stderr, "CUDA error: %s (%s=%d from %s at %s:%d)\n", cudaGetErrorString(err),
          cudaGetErrorName(err), static_cast<int>(err), what, file, line);
}

[[noreturn]] static inline void sc_cuda_fail(cudaError_t err, const char* what, const char* file,
                                             int line) {
  sc_cuda_report(err, what, file, line);
  exit(SC_EXIT_CUDA);
}

#define SC_CHECK(call)                                                   \
  do {                                                                   \
    cudaError_t sc_err_ = (call);                                        \
    if (sc_err_ != cudaSuccess) sc_cuda_fail(sc_err_, #call, __FILE__, __LINE__); \
  } while (0)

static inline double sc_now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Sleeps up to `seconds`, in short steps so that SIGTERM ends it early. Returns false if stopped.
static inline bool sc_sleep(double seconds) {
  double end = sc_now() + seconds;
  while (!sc_stop) {
    double left = end - sc_now();
    if (left <= 0) return true;
    if (left > 0.1) left = 0.1;
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = static_cast<long>(left * 1e9);
    nanosleep(&ts, nullptr);
  }
  return false;
}

// The program's name and usage text, for usage errors; set first thing in main().
static const char* sc_program = "";
static const char* sc_usage = "";

static inline void sc_cli(const char* program, const char* usage) {
  sc_program = program;
  sc_usage = usage;
  // Whole lines reach a pipe even from an untagged printf, and in order with the tagged ones.
  setvbuf(stdout, nullptr, _IOLBF, 0);
}

[[noreturn]] static inline void sc_usage_error(const char* what, const char* arg) {
  fprintf(stderr, "%s: %s%s%s\n%s", sc_program, what, arg ? ": " : "", arg ? arg : "", sc_usage);
  exit(SC_EXIT_USAGE);
}

static inline bool sc_is_help(const char* arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

// The value of `--name VALUE` or `--name=VALUE` when argv[*i] is that option, else nullptr.
static inline const char* sc_option(int argc, char** argv, int* i, const char* name) {
  const char* a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return nullptr;
  if (a[n] == '=') return a + n + 1;
  if (a[n] != '\0') return nullptr;
  if (*i + 1 >= argc) sc_usage_error("missing value for", a);
  *i += 1;
  return argv[*i];
}

// Strict number parsing: the whole argument must be a finite number, or it is a usage error
// (atof("10s") silently reads 10, and "1e999" is infinity).
static inline bool sc_parse_double(const char* text, double* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// The options of a timed workload (stress, serve): --duration S, --interval S, --plant-error and
// --help, each checked strictly. Returns -1 to go on, or the exit code after printing the help.
struct ScTimedOptions {
  double duration = 10;
  double interval = 1;
  bool plant_error = false;
};
static inline int sc_timed_options(int argc, char** argv, ScTimedOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const char* v = nullptr;
    if (sc_is_help(argv[i])) {
      fputs(sc_usage, stdout);
      return SC_EXIT_OK;
    } else if ((v = sc_option(argc, argv, &i, "--duration"))) {
      if (!sc_parse_double(v, &o->duration) || o->duration <= 0)
        sc_usage_error("--duration needs seconds > 0, got", v);
    } else if ((v = sc_option(argc, argv, &i, "--interval"))) {
      if (!sc_parse_double(v, &o->interval) || o->interval <= 0)
        sc_usage_error("--interval needs seconds > 0, got", v);
    } else if (strcmp(argv[i], "--plant-error") == 0) {
      o->plant_error = true;
    } else {
      sc_usage_error("unknown argument", argv[i]);
    }
  }
  return -1;
}

// Bytes: a decimal integer with an optional binary suffix K, M, G or T (1G = 2^30).
static inline bool sc_parse_bytes(const char* text, unsigned long long* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0) return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: return false;
  }
  if (*end != '\0' && end[1] != '\0') return false;
  if (shift > 0 && v > (~0ull >> shift)) return false;
  *out = v << shift;
  return true;
}

// The device as CUDA shows it to this process. With CUDA_VISIBLE_DEVICES=MIG-<uuid> that is
// one MIG instance: its own UUID (the runtime reports the MIG UUID, cuDeviceGetUuid_v2), its own
// SM count and memory, and a name ending in "MIG <profile>". The harness compares these with
// the instance it meant to use.
static inline cudaDeviceProp sc_open_device(const char* program) {
  // Before any context exists: wait for kernels by blocking instead of spinning, so that seven
  // workloads on seven instances do not also take seven CPU cores.
  SC_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  SC_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  SC_CHECK(cudaGetDeviceProperties(&prop, 0));
  const unsigned char* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  // nvidia-smi -L prints the same 16 bytes as GPU-8-4-4-4-12 or MIG-8-4-4-4-12. CUDA has no
  // "is MIG" property; the name and CUDA_VISIBLE_DEVICES both say it.
  const char* visible = getenv("CUDA_VISIBLE_DEVICES");
  bool mig = strstr(prop.name, " MIG ") != nullptr ||
             (visible != nullptr && strncmp(visible, "MIG-", 4) == 0);
  char uuid[64];
  snprintf(uuid, sizeof uuid,
           "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           mig ? "MIG" : "GPU", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
  sc_line(SC_FMT_DEVICE, program, uuid, prop.multiProcessorCount, prop.major, prop.minor,
          static_cast<unsigned long long>(prop.totalGlobalMem), prop.name);
  return prop;
}
