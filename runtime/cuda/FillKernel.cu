//===- FillKernel.cu - A fill kernel for the CUDA backend -----------------===//
//
// Kept free of host-library headers: nvcc compiles only this plain interface.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <cstdint>

namespace {
__global__ void fillKernel(float *data, int64_t count, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    data[i] = value;
}
} // namespace

namespace pc::cuda::detail {
cudaError_t launchFill(float *data, int64_t count, float value,
                       cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  int threads = 256;
  int64_t blocks = (count + threads - 1) / threads;
  fillKernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), threads,
               0, stream>>>(data, count, value);
  return cudaGetLastError();
}
} // namespace pc::cuda::detail
