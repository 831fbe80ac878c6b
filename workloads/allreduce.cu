// slicecheck allreduce: one rank of an NCCL all_reduce across processes, as jobs run it on MIG
// (one process per instance, each seeing only its own: CUDA enumerates one MIG device per
// process). No MPI: the ranks meet through a file holding NCCL's unique id.
//
//   allreduce --rank R --nranks N --id-file PATH [--bytes B] [--iters K] [--wait S]
//             [--plant-error]
//
// Rank 0 asks NCCL for a unique id and writes it to PATH atomically (a temporary file renamed
// over it), so a reader never sees half an id; the other ranks poll for PATH until --wait S.
// Every rank then joins the communicator (ncclCommInitRank), fills its buffer of B bytes of
// float with R + 1, runs 2 untimed and K timed in-place all_reduces (sum) on its stream, and
// checks that every element is N(N+1)/2, exact in float for any rank count a node has.
//
// Lines (see slicecheck.cuh): the device header, then one `SLICECHECK allreduce` with the
// rank, size, mean time per all_reduce, algbw = bytes / time and busbw = algbw * 2(N-1)/N (the
// bus bandwidth nccl-tests defines for all_reduce, doc/PERFORMANCE.md) and the count of wrong
// elements. The transport is NCCL's to say: with NCCL_DEBUG=INFO it prints "Channel 00 : 0[0]
// -> 1[0] via SHM/direct/direct" lines, which the harness reads from the same output.
// Exit: 0 ok; 1 wrong elements (--plant-error corrupts one on purpose, so the check is shown
// failing); 2 a CUDA or NCCL error (the NCCL one as "NCCL error: <its text>"), or the id file
// never came; 3 bad usage; 4 libnccl.so.2 could not be loaded.
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "nccl_dl.cuh"
#include "slicecheck.cuh"

static const char* const kUsage =
    "usage: allreduce --rank R --nranks N --id-file PATH [--bytes B] [--iters K] [--wait S]\n"
    "                 [--plant-error]\n"
    "  --rank R         this process's rank, 0 <= R < N\n"
    "  --nranks N       ranks in the communicator (one process each), N >= 1\n"
    "  --id-file PATH   where rank 0 writes NCCL's unique id and the others read it\n"
    "  --bytes B        all_reduce size (suffix K, M, G: binary; default 64M)\n"
    "  --iters K        timed all_reduces (default 20)\n"
    "  --wait S         seconds the ranks wait for the id file (default 60)\n"
    "  --plant-error    corrupt one result on purpose, to prove the check can fail\n";

enum { SC_EXIT_NCCL_MISSING = 4 };

struct Options {
  int rank = -1;
  int nranks = 0;
  const char* idFile = nullptr;
  unsigned long long bytes = 64ull << 20;
  int iters = 20;
  double waitS = 60;
  bool plantError = false;
};

static int parseInt(const char* text, const char* what, int min) {
  double v = 0;
  if (!sc_parse_double(text, &v) || v != static_cast<double>(static_cast<int>(v)) || v < min)
    sc_usage_error(what, text);
  return static_cast<int>(v);
}

static Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* v = nullptr;
    if (sc_is_help(argv[i])) {
      fputs(kUsage, stdout);
      exit(SC_EXIT_OK);
    } else if ((v = sc_option(argc, argv, &i, "--rank"))) {
      o.rank = parseInt(v, "--rank needs an integer >= 0, got", 0);
    } else if ((v = sc_option(argc, argv, &i, "--nranks"))) {
      o.nranks = parseInt(v, "--nranks needs an integer >= 1, got", 1);
    } else if ((v = sc_option(argc, argv, &i, "--id-file"))) {
      o.idFile = v;
    } else if ((v = sc_option(argc, argv, &i, "--bytes"))) {
      if (!sc_parse_bytes(v, &o.bytes) || o.bytes < sizeof(float))
        sc_usage_error("--bytes needs a size of at least 4 bytes, got", v);
    } else if ((v = sc_option(argc, argv, &i, "--iters"))) {
      o.iters = parseInt(v, "--iters needs an integer >= 1, got", 1);
    } else if ((v = sc_option(argc, argv, &i, "--wait"))) {
      if (!sc_parse_double(v, &o.waitS) || o.waitS <= 0)
        sc_usage_error("--wait needs seconds > 0, got", v);
    } else if (strcmp(argv[i], "--plant-error") == 0) {
      o.plantError = true;
    } else {
      sc_usage_error("unknown argument", argv[i]);
    }
  }
  if (o.nranks < 1 || o.idFile == nullptr || *o.idFile == '\0')
    sc_usage_error("--rank, --nranks and --id-file are required", nullptr);
  if (o.rank < 0 || o.rank >= o.nranks) sc_usage_error("--rank must be below --nranks", nullptr);
  return o;
}

[[noreturn]] static void ncclFail(const ScNccl& n, scNcclResult_t r, const char* what) {
  fflush(stdout);
  fprintf(stderr, "NCCL error: %s (%d from %s)\n", n.getErrorString(r), r, what);
  exit(SC_EXIT_CUDA);
}

#define SC_NCCL(n, call)                              \
  do {                                                \
    scNcclResult_t sc_r_ = (call);                    \
    if (sc_r_ != 0) ncclFail((n), sc_r_, #call);      \
  } while (0)

// Rank 0: the id, written whole under a temporary name and renamed over PATH (rename is atomic
// within a file system), so a polling rank reads either nothing or all 128 bytes.
static void publishId(const ScNccl& n, const char* path, scNcclUniqueId* id) {
  SC_NCCL(n, n.getUniqueId(id));
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, static_cast<int>(getpid()));
  FILE* f = fopen(tmp, "wb");
  bool ok = f != nullptr && fwrite(id, sizeof *id, 1, f) == 1;
  if (f != nullptr && fclose(f) != 0) ok = false;
  if (!ok || rename(tmp, path) != 0) {
    fprintf(stderr, "allreduce: cannot write the id file %s: %s\n", path, strerror(errno));
    unlink(tmp);
    exit(SC_EXIT_CUDA);
  }
}

// The other ranks: PATH once it exists, until the deadline (a rank 0 that never came is a run
// that cannot be judged, not a hang).
static void readId(const char* path, double waitS, scNcclUniqueId* id) {
  double end = sc_now() + waitS;
  while (!sc_stop) {
    FILE* f = fopen(path, "rb");
    if (f != nullptr) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
    }
    if (sc_now() >= end) break;
    sc_sleep(0.05);
  }
  fprintf(stderr, "allreduce: no NCCL id in %s after %.1f s (rank 0 did not start?)\n", path,
          waitS);
  exit(SC_EXIT_CUDA);
}

__global__ void fill(float* p, unsigned long long n, float value) {
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    p[i] = value;
}

__global__ void verify(const float* p, unsigned long long n, float expected,
                       unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (unsigned long long i = blockIdx.x * 1ull * blockDim.x + threadIdx.x; i < n;
       i += 1ull * gridDim.x * blockDim.x)
    mine += p[i] != expected ? 1 : 0;
  if (mine != 0) atomicAdd(wrong, mine);
}

int main(int argc, char** argv) {
  sc_cli("allreduce", kUsage);
  Options o = parseOptions(argc, argv);
  sc_install_signals();
  ScNccl n;
  char err[512];
  if (!scNcclLoad(&n, err, sizeof err)) {
    fprintf(stderr, "allreduce: NCCL unavailable: %s\n", err);
    return SC_EXIT_NCCL_MISSING;
  }
  sc_open_device("allreduce");
  scNcclUniqueId id;
  if (o.rank == 0)
    publishId(n, o.idFile, &id);
  else
    readId(o.idFile, o.waitS, &id);
  scNcclComm_t comm;
  SC_NCCL(n, n.commInitRank(&comm, o.nranks, id, o.rank));

  const unsigned long long count = o.bytes / sizeof(float);
  const unsigned long long bytes = count * sizeof(float);
  float* buf = nullptr;
  unsigned long long* wrong = nullptr;
  cudaStream_t stream;
  SC_CHECK(cudaMalloc(&buf, bytes));
  SC_CHECK(cudaMalloc(&wrong, sizeof *wrong));
  SC_CHECK(cudaStreamCreate(&stream));
  const int blocks = 1024, threads = 256;
  double start = 0;
  for (int i = -2; i < o.iters && !sc_stop; ++i) {
    if (i == 0) {
      SC_CHECK(cudaStreamSynchronize(stream));
      start = sc_now();
    }
    // Timed as nccl-tests times in-place runs: the all_reduce alone, back to back.
    if (i < 0) fill<<<blocks, threads, 0, stream>>>(buf, count, static_cast<float>(o.rank + 1));
    SC_NCCL(n, n.allReduce(buf, buf, count, SC_NCCL_FLOAT32, SC_NCCL_SUM, comm, stream));
  }
  SC_CHECK(cudaStreamSynchronize(stream));
  const double seconds = (sc_now() - start) / o.iters;
  if (int code = sc_stopped_exit("allreduce", sc_now() - start)) return code;

  // Check one fresh all_reduce: the timed ones summed the sums.
  fill<<<blocks, threads, 0, stream>>>(buf, count, static_cast<float>(o.rank + 1));
  SC_NCCL(n, n.allReduce(buf, buf, count, SC_NCCL_FLOAT32, SC_NCCL_SUM, comm, stream));
  if (o.plantError) fill<<<1, 1, 0, stream>>>(buf, 1, -1.0f);
  SC_CHECK(cudaMemsetAsync(wrong, 0, sizeof *wrong, stream));
  const float expected = static_cast<float>(o.nranks) * static_cast<float>(o.nranks + 1) / 2;
  verify<<<blocks, threads, 0, stream>>>(buf, count, expected, wrong);
  SC_CHECK(cudaGetLastError());
  unsigned long long bad = 0;
  SC_CHECK(cudaMemcpyAsync(&bad, wrong, sizeof bad, cudaMemcpyDeviceToHost, stream));
  SC_CHECK(cudaStreamSynchronize(stream));

  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double busbw = algbw * 2.0 * (o.nranks - 1) / o.nranks;
  sc_line(SC_FMT_ALLREDUCE, o.rank, o.nranks, static_cast<unsigned long long>(bytes),
          seconds * 1e6, algbw, busbw, bad);
  n.commDestroy(comm);
  cudaFree(buf);
  cudaFree(wrong);
  if (o.rank == 0) unlink(o.idFile);
  return bad == 0 ? SC_EXIT_OK : SC_EXIT_CHECK_FAILED;
}
