//===- CudaPluginLoader.h - Finds and loads libpc-cuda.so -------*- C++ -*-===//
//
// The executor's side of runtime/cuda/CudaPlugin.h: loads the CUDA backend's
// module the first time it is asked, and keeps it loaded (CUDA, cuBLAS and
// NCCL are never unloaded from a process).
//
// Where it looks, first match wins:
//   1. $PC_CUDA_PLUGIN, when set (then nowhere else)
//   2. beside the running program's install: <bin>/../<libdir>/pc/
//   3. the build tree that built this program
//   4. the install prefix it was configured with: <prefix>/<libdir>/pc/
// A module of another build (another PC_CUDA_PLUGIN_ABI) is skipped, and named
// in the error when nothing fits.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_CUDAPLUGINLOADER_H
#define PC_RUNTIME_EXEC_CUDAPLUGINLOADER_H

#include "runtime/cuda/CudaPlugin.h"

#include "absl/status/statusor.h"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pc::runtime {

/// The paths tried, in order.
std::vector<std::string> cudaPluginCandidates();

class CudaPluginLoader {
public:
  /// The module's table, loading it on the first call; thread-safe. The
  /// outcome of the first call stands.
  absl::StatusOr<const cuda::CudaPluginApi *> get();

private:
  std::mutex mu;
  std::optional<absl::StatusOr<const cuda::CudaPluginApi *>> loaded;
};

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_CUDAPLUGINLOADER_H
