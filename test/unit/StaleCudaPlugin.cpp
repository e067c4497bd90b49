//===- StaleCudaPlugin.cpp - A CUDA module of another build, for tests ----===//
//
// Exports the entry point of libpc-cuda.so with an interface hash no build
// has, as a module left over from an older pc would: CudaPluginTest checks
// that the loader refuses it before touching anything else in the table.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaPlugin.h"

extern "C" __attribute__((visibility("default")))
const pc::cuda::CudaPluginApi *
pc_cuda_plugin() {
  static const pc::cuda::CudaPluginApi api = {"0123456789ab-of-another-build"};
  return &api;
}
