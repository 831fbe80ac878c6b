// NCCL for the built-in workloads that talk (allreduce-ranks, train-step), loaded at run time
// with dlopen instead of linked: a node that runs nccl-tests has libnccl.so.2 in its loader path,
// but the build machine (and many nodes' CUDA toolkits) has no nccl.h, and a workload that
// cannot load NCCL must still start, say so on one line and exit SC_EXIT_CUDA-like with its own
// code, instead of failing to link for every workload of the node.
//
// The declarations below are NCCL's public ABI, stable since NCCL 2.0 (nccl.h of NVIDIA/nccl:
// ncclUniqueId is 128 opaque bytes; the enum values are those of nccl.h.in). Only what the
// workloads call is declared. Host-only code.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#define SC_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[SC_NCCL_UNIQUE_ID_BYTES];
} scNcclUniqueId;
typedef struct scNcclComm* scNcclComm_t;
typedef int scNcclResult_t;  // ncclSuccess = 0
enum { SC_NCCL_FLOAT32 = 7 };  // ncclFloat32
enum { SC_NCCL_SUM = 0 };      // ncclSum

// The exit of a workload that could not load NCCL (after one line saying why): not
// SC_EXIT_CUDA, because nothing ran on the device, and not a failed check either.
enum { SC_EXIT_NO_NCCL = 4 };

struct ScNccl {
  void* handle;
  scNcclResult_t (*getUniqueId)(scNcclUniqueId*);
  scNcclResult_t (*commInitRank)(scNcclComm_t*, int, scNcclUniqueId, int);
  scNcclResult_t (*commInitAll)(scNcclComm_t*, int, const int*);
  scNcclResult_t (*allReduce)(const void*, void*, size_t, int, int, scNcclComm_t, cudaStream_t);
  scNcclResult_t (*groupStart)(void);
  scNcclResult_t (*groupEnd)(void);
  scNcclResult_t (*commDestroy)(scNcclComm_t);
  const char* (*getErrorString)(scNcclResult_t);
};

// Loads libnccl.so.2 (or the file named by SLICECHECK_NCCL_LIB). On failure, err holds why and
// the result is false; nothing is half-loaded.
static bool scNcclLoad(ScNccl* n, char* err, size_t errLen) {
  const char* lib = getenv("SLICECHECK_NCCL_LIB");
  if (lib == nullptr || *lib == '\0') lib = "libnccl.so.2";
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    snprintf(err, errLen, "cannot load %s: %s", lib, dlerror());
    return false;
  }
  struct Sym {
    void** slot;
    const char* name;
  } syms[] = {
      {reinterpret_cast<void**>(&n->getUniqueId), "ncclGetUniqueId"},
      {reinterpret_cast<void**>(&n->commInitRank), "ncclCommInitRank"},
      {reinterpret_cast<void**>(&n->commInitAll), "ncclCommInitAll"},
      {reinterpret_cast<void**>(&n->allReduce), "ncclAllReduce"},
      {reinterpret_cast<void**>(&n->groupStart), "ncclGroupStart"},
      {reinterpret_cast<void**>(&n->groupEnd), "ncclGroupEnd"},
      {reinterpret_cast<void**>(&n->commDestroy), "ncclCommDestroy"},
      {reinterpret_cast<void**>(&n->getErrorString), "ncclGetErrorString"},
  };
  for (const Sym& s : syms) {
    *s.slot = dlsym(h, s.name);
    if (*s.slot == nullptr) {
      snprintf(err, errLen, "%s has no %s", lib, s.name);
      dlclose(h);
      return false;
    }
  }
  n->handle = h;
  return true;
}
