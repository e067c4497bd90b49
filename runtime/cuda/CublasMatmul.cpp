//===- CublasMatmul.cpp - Batched matrix products through cuBLASLt --------===//

#include "runtime/cuda/CublasMatmul.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace pc::cuda {

using runtime::portable::Elem;
using runtime::portable::MatmulShape;

namespace {

void check(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt ") + what + ": " +
                             cublasGetStatusString(status));
}

void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " +
                             cudaGetErrorString(error));
}

cudaDataType_t dataType(Elem t) {
  switch (t) {
  case Elem::F16:
    return CUDA_R_16F;
  case Elem::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

/// The stride in matrices of batch index `ix` over `batches` when every
/// batch is one stride from the one before; -1 otherwise.
int64_t uniformStride(const runtime::portable::Index &ix, int64_t batches) {
  if (batches <= 1)
    return 0;
  int64_t stride = ix.offset(1) - ix.offset(0);
  for (int64_t i = 0; i < batches; ++i)
    if (ix.offset(i) != ix.offset(0) + i * stride)
      return -1;
  return stride;
}

} // namespace

struct CublasMatmul::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

CublasMatmul::CublasMatmul() = default;

CublasMatmul::~CublasMatmul() {
  plans.clear();
  for (auto &[device, handle] : handles)
    cublasLtDestroy(static_cast<cublasLtHandle_t>(handle));
}

void *CublasMatmul::handleFor(int device) {
  auto it = handles.find(device);
  if (it != handles.end())
    return it->second;
  cublasLtHandle_t handle;
  check(cublasLtCreate(&handle), "create");
  handles[device] = handle;
  return handle;
}

CublasMatmul::Plan &CublasMatmul::planFor(int device, const Key &key) {
  auto it = plans.find({device, key});
  if (it != plans.end())
    return *it->second;
  auto [type, outType, unused, m, n, k, ta, tb, batches, strideA, strideB] =
      key;
  (void)unused;
  auto plan = std::make_unique<Plan>();
  cudaDataType_t in = dataType(static_cast<Elem>(type)),
                 out = dataType(static_cast<Elem>(outType));
  check(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "matmul descriptor");
  // Column-major C^T (n x m) = op(B)^T (n x k) · op(A)^T (k x m): cuBLASLt's
  // A is our B, its B our A, each transposed when ours is.
  cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                    opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                       &opA, sizeof opA),
        "transpose A");
  check(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                       &opB, sizeof opB),
        "transpose B");
  // The stored matrices, column-major: ours row-major, read transposed.
  check(cublasLtMatrixLayoutCreate(&plan->a, in, tb ? k : n, tb ? n : k,
                                   tb ? k : n),
        "layout of B");
  check(cublasLtMatrixLayoutCreate(&plan->b, in, ta ? m : k, ta ? k : m,
                                   ta ? m : k),
        "layout of A");
  check(cublasLtMatrixLayoutCreate(&plan->c, out, n, m, n), "layout of C");
  int32_t count = static_cast<int32_t>(batches);
  int64_t strides[3] = {strideB * k * n, strideA * m * k, m * n};
  cublasLtMatrixLayout_t layouts[3] = {plan->a, plan->b, plan->c};
  for (int i = 0; i < 3; ++i) {
    check(cublasLtMatrixLayoutSetAttribute(layouts[i],
                                           CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                           &count, sizeof count),
          "batch count");
    check(cublasLtMatrixLayoutSetAttribute(
              layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
              &strides[i], sizeof strides[i]),
          "batch stride");
  }
  cublasLtMatmulPreference_t pref;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  size_t workspace = kWorkspace;
  check(cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
            sizeof workspace),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      static_cast<cublasLtHandle_t>(handleFor(device)), plan->op, plan->a,
      plan->b, plan->c, plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check(status, "heuristic");
  if (found == 0)
    throw std::runtime_error("cuBLASLt has no algorithm for a " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(k) + " product");
  plan->algo = result.algo;
  return *plans.emplace(std::pair{device, key}, std::move(plan)).first->second;
}

void CublasMatmul::run(void *streamHandle, Elem type, const void *a,
                       const void *b, Elem outType, void *out,
                       const MatmulShape &s,
                       runtime::portable::Scratch &scratch) {
  auto stream = static_cast<cudaStream_t>(streamHandle);
  int64_t outBytes = s.m * s.n * (outType == Elem::F32 ? 4 : 2);
  if (s.m == 0 || s.n == 0 || s.batches == 0)
    return;
  if (s.k == 0) {
    check(cudaMemsetAsync(out, 0, outBytes * s.batches, stream),
          "cudaMemsetAsync");
    return;
  }
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  int64_t strideA = uniformStride(s.batchA, s.batches),
          strideB = uniformStride(s.batchB, s.batches);
  bool strided = strideA >= 0 && strideB >= 0;
  int64_t calls = strided ? 1 : s.batches;
  Key key{static_cast<int>(type),
          static_cast<int>(outType),
          0,
          s.m,
          s.n,
          s.k,
          s.transposeA,
          s.transposeB,
          strided ? s.batches : 1,
          strided ? strideA : 0,
          strided ? strideB : 0};
  void *workspace = scratch.get(kWorkspace);
  std::lock_guard<std::mutex> lock(mu);
  Plan &plan = planFor(device, key);
  auto handle = static_cast<cublasLtHandle_t>(handleFor(device));
  int64_t inBytes = type == Elem::F32 ? 4 : 2;
  float alpha = s.alpha, beta = 0.0f;
  for (int64_t i = 0; i < calls; ++i) {
    const char *pa = static_cast<const char *>(a) +
                     (strided ? s.batchA.offset(0) : s.batchA.offset(i)) * s.m *
                         s.k * inBytes;
    const char *pb = static_cast<const char *>(b) +
                     (strided ? s.batchB.offset(0) : s.batchB.offset(i)) * s.k *
                         s.n * inBytes;
    char *pc = static_cast<char *>(out) + i * outBytes;
    check(cublasLtMatmul(handle, plan.op, &alpha, pb, plan.a, pa, plan.b, &beta,
                         pc, plan.c, pc, plan.c, &plan.algo, workspace,
                         kWorkspace, stream),
          "matmul");
  }
}

} // namespace pc::cuda
