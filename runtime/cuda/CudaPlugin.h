//===- CudaPlugin.h - The CUDA backend as a loadable module -----*- C++ -*-===//
//
// The CUDA backend is built as a shared module, libpc-cuda.so, which the
// executor loads (dlopen) the first time a rank runs on a CUDA device
// (runtime/exec/CudaPluginLoader.h). A program that only runs on CPU
// devices never loads the CUDA runtime, cuBLAS(Lt) or NCCL: it starts
// without cuBLASLt's half second of loading, its threads do not carry those
// libraries' thread-local storage, and it runs where they are not
// installed.
//
// Both sides include this header. The module exports one C symbol,
// kCudaPluginSymbol, which returns the table below; everything else in it
// is local. The table passes C++ objects, so the module must come from the
// same interface as the program: `abi` is PC_CUDA_PLUGIN_ABI, a hash of
// the headers whose types cross (this one, runtime/device, runtime/comm,
// runtime/kernels/portable) and of the compiler, made at build time into
// CudaPluginAbi.h; the loader refuses a module whose hash differs. `abi`
// stays the table's first member, so that any module's can be read.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_CUDAPLUGIN_H
#define PC_RUNTIME_CUDA_CUDAPLUGIN_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"
#include "runtime/kernels/portable/DeviceKernels.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <memory>

namespace pc::cuda {

/// The module's file name, and the symbol it exports.
inline constexpr const char *kCudaPluginFile = "libpc-cuda.so";
inline constexpr const char *kCudaPluginSymbol = "pc_cuda_plugin";

struct CudaPluginApi {
  /// PC_CUDA_PLUGIN_ABI of the module's build.
  const char *abi = nullptr;
  /// The GPUs this process sees (CUDA_VISIBLE_DEVICES applies); an error
  /// only when the driver cannot be asked.
  absl::StatusOr<int> (*deviceCount)() = nullptr;
  /// A device on GPU `ordinal`, named "cuda:<ordinal>", holding at most
  /// `capacity` bytes (0: no limit).
  absl::StatusOr<std::unique_ptr<runtime::Device>> (*makeDevice)(
      int ordinal, int64_t capacity) = nullptr;
  /// NCCL for rank `rank` on GPU `ordinal`; `host` hands the groups' ids
  /// around (NcclCommunicator.h).
  std::unique_ptr<runtime::Communicator> (*makeCommunicator)(
      std::unique_ptr<runtime::Communicator> host, int64_t rank, int ordinal,
      double timeoutSeconds) = nullptr;
  /// The portable kernels built by nvcc, with cuBLASLt's products.
  std::unique_ptr<runtime::portable::DeviceKernels> (*makeKernels)() = nullptr;
};

/// The type of kCudaPluginSymbol.
using CudaPluginEntry = const CudaPluginApi *(*)();

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_CUDAPLUGIN_H
