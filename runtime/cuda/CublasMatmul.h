//===- CublasMatmul.h - Batched matrix products through cuBLASLt -*- C++
//-*-===//
//
// The portable kernels' matrix product on CUDA: row-major products of f32,
// f16 or bf16 matrices with f32 accumulation, transposed and batched as the
// IR allows, each as one cuBLASLt call (strided batches) or one per batch
// where broadcast batch dims give no single stride. The row-major product
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, so
// no operand is copied. Descriptors and the heuristic's algorithm are made
// once per shape and device, and reused.
//
// Plain C++ for g++: nvcc only sees this header.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_CUDA_CUBLASMATMUL_H
#define PC_RUNTIME_CUDA_CUBLASMATMUL_H

#include "runtime/kernels/portable/DeviceKernels.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

namespace pc::cuda {

class CublasMatmul {
public:
  CublasMatmul();
  ~CublasMatmul();
  CublasMatmul(const CublasMatmul &) = delete;
  CublasMatmul &operator=(const CublasMatmul &) = delete;

  /// out = alpha · op(a) · op(b) per batch on `stream` (a cudaStream_t) of
  /// the current device; throws std::runtime_error naming the failed call.
  void run(void *stream, runtime::portable::Elem type, const void *a,
           const void *b, runtime::portable::Elem outType, void *out,
           const runtime::portable::MatmulShape &shape,
           runtime::portable::Scratch &scratch);

  /// Bytes of workspace each call may use.
  static constexpr size_t kWorkspace = 32 << 20;

private:
  struct Plan;
  using Key = std::tuple<int, int, int, int64_t, int64_t, int64_t, bool, bool,
                         int64_t, int64_t, int64_t>;
  Plan &planFor(int device, const Key &key);
  void *handleFor(int device);

  std::mutex mu;
  std::map<int, void *> handles;
  std::map<std::pair<int, Key>, std::unique_ptr<Plan>> plans;
};

} // namespace pc::cuda

#endif // PC_RUNTIME_CUDA_CUBLASMATMUL_H
