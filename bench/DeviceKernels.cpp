//===- DeviceKernels.cpp - The GPU backend's kernels, timed ---------------===//
//
// On the host: the portable kernels' host build (Thrust's CPP system, one
// thread) against the CPU backend's kernels (oneDNN, OpenBLAS and pc's
// loops, one thread) on the same data, op by op, as a time ratio measured
// in the same run. It has no target: the host build exists to run the GPU
// kernels' logic in CI.
//
// On a GPU (when the build has the CUDA backend and one is visible):
//  - the product through the backend (CudaKernels' cuBLASLt path) against a
//    bare cuBLASLt call, f32 and bf16, at 4096^3: target >= 0.9x;
//  - elementwise add, layer norm, its gradient and softmax at 64 MiB
//    tensors, as a share of the GPU's memory bandwidth: target >= 70 %;
//    likewise the reductions (column and row sums, the norm's scale
//    gradient, cross entropy), which the target does not name.
//
//   build/bench/pc-bench-device-kernels [--gpu-only]
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/portable/DeviceKernels.h"
#include "bench/Timing.h"
#include "runtime/device/HostTensor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/OneDnn.h"

#if PC_HAVE_CUDA
#include "runtime/cuda/CudaKernels.h"
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace pc::runtime;
namespace portable = pc::runtime::portable;

namespace {

/// Host scratch for the host build's calls.
class HeapScratch final : public portable::Scratch {
public:
  void *get(size_t bytes) override {
    held.push_back(std::make_unique<char[]>(bytes + 256));
    return held.back().get();
  }

private:
  std::vector<std::unique_ptr<char[]>> held;
};

HostTensor random(std::vector<int64_t> shape, uint32_t seed) {
  HostTensor t = HostTensor::zeros(std::move(shape), CommType::F32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.as<float>()[i] = d(rng);
  return t;
}

portable::Index contiguous(const std::vector<int64_t> &s) {
  portable::Index ix;
  ix.rank = static_cast<int32_t>(s.size());
  int64_t stride = 1;
  for (size_t d = s.size(); d-- > 0;) {
    ix.size[d] = s[d];
    ix.stride[d] = stride;
    stride *= s[d];
  }
  return ix;
}

void row(const char *op, double native, double ported) {
  std::printf("%-28s %10.2f ms %10.2f ms %8.2fx\n", op, native * 1e3,
              ported * 1e3, ported / native);
}

void hostBench() {
  std::unique_ptr<portable::DeviceKernels> k = portable::makeHostKernels();
  if (!k) {
    std::printf("this build has no portable kernels\n");
    return;
  }
  portable::Launch l;
  HeapScratch scratch;
  const int runs = 5;
  std::printf("host build of the GPU kernels against the CPU backend, one "
              "thread, best of %d\n",
              runs);
  std::printf("%-28s %13s %13s %9s\n", "op", "CPU backend", "portable",
              "ratio");
  const int64_t n = 1 << 22;
  HostTensor a = random({n}, 1), b = random({n}, 2), out = random({n}, 3);
  row("add, 4M f32",
      pc::bench::best(runs,
                      [&] { (void)cpu::binary(cpu::Binary::Add, a, b, out); }),
      pc::bench::best(runs, [&] {
        k->binary(l, portable::BinaryOp::Add, portable::Elem::F32, a.data(),
                  contiguous({n}), b.data(), contiguous({n}), out.data(), n);
      }));
  cpu::UnaryPlan gelu(cpu::Unary::GeluTanh, n);
  row("gelu (tanh), 4M f32",
      pc::bench::best(runs, [&] { (void)gelu.run(a, out); }),
      pc::bench::best(runs, [&] {
        k->unary(l, portable::UnaryOp::GeluTanh, portable::Elem::F32, a.data(),
                 out.data(), n);
      }));
  const int64_t rows = 4096, width = 1024;
  HostTensor x = random({rows, width}, 4), y = random({rows, width}, 5),
             g = random({width}, 6), bt = random({width}, 7);
  row("layer norm, 4096x1024",
      pc::bench::best(runs,
                      [&] {
                        TensorView beta(bt);
                        (void)cpu::normalize(x, 1, g, &beta, 1e-5f, false, y);
                      }),
      pc::bench::best(runs, [&] {
        k->normalize(l, portable::Elem::F32, x.data(), g.data(), bt.data(),
                     y.data(), rows, width, 1e-5f, false);
      }));
  cpu::SoftmaxPlan softmax({rows, width}, 1, false);
  row("softmax, 4096x1024",
      pc::bench::best(runs, [&] { (void)softmax.run(x, y); }),
      pc::bench::best(runs, [&] {
        k->softmax(l, portable::Elem::F32, x.data(), y.data(), rows, width, 1,
                   false, false, 1);
      }));
  // Sums down the columns (a norm's or a bias's gradient) and along the
  // rows, in Math.h's chunked order on both sides.
  HostTensor cols = random({width}, 16), sums = random({rows}, 17);
  portable::Index down, along;
  down.rank = along.rank = 1;
  down.size[0] = rows;
  down.stride[0] = width;
  along.size[0] = rows;
  along.stride[0] = width;
  row("column sums, 4096x1024",
      pc::bench::best(runs,
                      [&] {
                        (void)cpu::reduce(cpu::Reduction::Sum, x,
                                          std::vector<int64_t>{0}, cols);
                      }),
      pc::bench::best(runs, [&] {
        k->reduce(l, portable::Reduction::Sum, portable::Elem::F32, x.data(),
                  contiguous({width}), down, 1, rows, cols.data(), width,
                  scratch);
      }));
  row("row sums, 4096x1024",
      pc::bench::best(runs,
                      [&] {
                        (void)cpu::reduce(cpu::Reduction::Sum, x,
                                          std::vector<int64_t>{1}, sums);
                      }),
      pc::bench::best(runs, [&] {
        k->reduce(l, portable::Reduction::Sum, portable::Elem::F32, x.data(),
                  along, portable::Index{}, width, width, sums.data(), rows,
                  scratch);
      }));
  HostTensor m = random({n}, 8), v = random({n}, 9), w2 = random({n}, 10),
             m2 = random({n}, 11), v2 = random({n}, 12);
  for (int64_t i = 0; i < n; ++i)
    v.as<float>()[i] = std::abs(v.as<float>()[i]);
  portable::AdamConstants c{0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f};
  float lr = 1e-3f, c1 = 0.1f, c2 = 0.001f;
  row("adamw, 4M f32",
      pc::bench::best(runs,
                      [&] {
                        (void)cpu::adamUpdate(a, b, m, v, lr, c1, c2, c, w2, m2,
                                              v2);
                      }),
      pc::bench::best(runs, [&] {
        k->adam(l, a.as<float>(), b.as<float>(), m.as<float>(), v.as<float>(),
                &lr, &c1, &c2, c, w2.as<float>(), m2.as<float>(),
                v2.as<float>(), n);
      }));
  const int64_t s = 512;
  HostTensor p = random({s, s}, 13), q = random({s, s}, 14),
             r = random({s, s}, 15);
  cpu::MatmulPlan mm({s, s}, {s, s}, false, false, {s, s});
  portable::MatmulShape shape;
  shape.m = shape.n = shape.k = s;
  row("matmul 512^3 f32", pc::bench::best(runs, [&] { (void)mm.run(p, q, r); }),
      pc::bench::best(runs, [&] {
        k->matmul(l, portable::Elem::F32, p.data(), q.data(),
                  portable::Elem::F32, r.data(), shape, scratch);
      }));
}

#if PC_HAVE_CUDA
/// Device memory for the GPU part, freed at the end.
class DeviceScratch final : public portable::Scratch {
public:
  void *get(size_t bytes) override {
    void *p = nullptr;
    cudaMalloc(&p, bytes + 256);
    held.push_back(p);
    return p;
  }
  ~DeviceScratch() override {
    for (void *p : held)
      cudaFree(p);
  }

private:
  std::vector<void *> held;
};

/// A call's temporaries, reused from call to call as the runtime's caching
/// allocator reuses them (a cudaMalloc per call would time the allocator,
/// and stall the stream): next() starts a call, whose gets take the
/// previous call's buffers in order.
class ReusedScratch final : public portable::Scratch {
public:
  ReusedScratch &next() {
    used = 0;
    return *this;
  }
  void *get(size_t bytes) override {
    if (used == held.size())
      held.emplace_back(nullptr, 0);
    auto &[p, size] = held[used++];
    if (bytes > size) {
      cudaFree(p);
      p = nullptr;
      cudaMalloc(&p, bytes);
      size = bytes;
    }
    return p;
  }
  ~ReusedScratch() override {
    for (auto &[p, size] : held)
      cudaFree(p);
  }

private:
  std::vector<std::pair<void *, size_t>> held;
  size_t used = 0;
};

/// Seconds per call of `fn`, by CUDA events over `reps` calls after one
/// warm-up.
template <typename Fn> double gpuTime(cudaStream_t s, int reps, Fn fn) {
  fn();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, s);
  for (int i = 0; i < reps; ++i)
    fn();
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3 / reps;
}

/// A bare cuBLASLt product of n x n matrices (row-major, as the backend
/// calls it), its heuristic's first algorithm.
double bareLt(cudaStream_t s, cudaDataType_t type, int64_t n, void *a, void *b,
              void *c, void *ws, size_t wsBytes) {
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  cublasLtMatmulDesc_t op;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, type, n, n, n);
  cublasLtMatrixLayoutCreate(&lb, type, n, n, n);
  cublasLtMatrixLayoutCreate(&lc, type, n, n, n);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof wsBytes);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &res, &found);
  float alpha = 1, beta = 0;
  double t = gpuTime(s, 10, [&] {
    cublasLtMatmul(h, op, &alpha, b, la, a, lb, &beta, c, lc, c, lc, &res.algo,
                   ws, wsBytes, s);
  });
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(h);
  return t;
}

void gpuBench() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("GPU part skipped: no CUDA device\n");
    return;
  }
  cudaSetDevice(0);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int clockKHz = 0, busBits = 0;
  cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, 0);
  double peak = 2.0 * clockKHz * 1e3 * busBits / 8;
  std::printf("\nGPU: %s, peak memory bandwidth %.0f GB/s\n", prop.name,
              peak / 1e9);
  std::unique_ptr<portable::DeviceKernels> k = pc::cuda::makeCudaKernels();
  cudaStream_t s;
  cudaStreamCreate(&s);
  portable::Launch l{s};
  DeviceScratch scratch;
  const int64_t n = 4096;
  for (auto [elem, type, name] :
       {std::tuple{portable::Elem::F32, CUDA_R_32F, "f32"},
        std::tuple{portable::Elem::BF16, CUDA_R_16BF, "bf16"}}) {
    size_t bytes = n * n * (elem == portable::Elem::F32 ? 4 : 2);
    void *a = scratch.get(bytes), *b = scratch.get(bytes),
         *c = scratch.get(bytes), *ws = scratch.get(32 << 20);
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    portable::MatmulShape shape;
    shape.m = shape.n = shape.k = n;
    ReusedScratch workspace;
    double ours = gpuTime(s, 10, [&] {
      k->matmul(l, elem, a, b, elem, c, shape, workspace.next());
    });
    double bare = bareLt(s, type, n, a, b, c, ws, 32 << 20);
    std::printf("matmul 4096^3 %-5s backend %.3f ms (%.0f TFLOP/s), bare "
                "cuBLASLt %.3f ms: %.2fx (target >= 0.9)\n",
                name, ours * 1e3, 2.0 * n * n * n / ours / 1e12, bare * 1e3,
                bare / ours);
  }
  const int64_t elems = (64 << 20) / 4, width = 4096, rows = elems / width;
  void *x = scratch.get(elems * 4), *y = scratch.get(elems * 4),
       *z = scratch.get(elems * 4), *g = scratch.get(width * 4),
       *bt = scratch.get(width * 4);
  cudaMemset(x, 0, elems * 4);
  cudaMemset(y, 0, elems * 4);
  cudaMemset(g, 0, width * 4);
  cudaMemset(bt, 0, width * 4);
  auto report = [&](const char *op, double t, double moved) {
    std::printf("%-26s %.3f ms, %.0f GB/s: %.0f %% of peak (target >= 70 "
                "%%)\n",
                op, t * 1e3, moved / t / 1e9, 100 * moved / t / peak);
  };
  report("add, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->binary(l, portable::BinaryOp::Add, portable::Elem::F32, x,
                             contiguous({elems}), y, contiguous({elems}), z,
                             elems);
                 }),
         3.0 * elems * 4);
  report("layer norm, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->normalize(l, portable::Elem::F32, x, g, bt, z, rows,
                                width, 1e-5f, false);
                 }),
         2.0 * elems * 4);
  report("layer norm grad, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->layerNormGrad(l, portable::Elem::F32, y, x, g, z, rows,
                                    width, 1e-5f);
                 }),
         3.0 * elems * 4);
  report("softmax, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->softmax(l, portable::Elem::F32, x, z, rows, width, 1,
                              false, false, 1);
                 }),
         2.0 * elems * 4);
  // The reductions of a training step: a norm's scale and a bias's
  // gradients down the columns, sums along the rows (cross entropy's
  // gradient), and cross entropy itself over rows a vocabulary long.
  ReusedScratch temps;
  portable::Index down, along;
  down.rank = along.rank = 1;
  down.size[0] = along.size[0] = rows;
  down.stride[0] = along.stride[0] = width;
  report("column sums, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->reduce(l, portable::Reduction::Sum, portable::Elem::F32,
                             x, contiguous({width}), down, 1, rows, z, width,
                             temps.next());
                 }),
         1.0 * elems * 4);
  report("row sums, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->reduce(l, portable::Reduction::Sum, portable::Elem::F32,
                             x, along, portable::Index{}, width, width, z, rows,
                             temps.next());
                 }),
         1.0 * elems * 4);
  report("norm scale grad, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->layerNormScaleGrad(l, portable::Elem::F32, y, x, z, rows,
                                         width, 1e-5f, temps.next());
                 }),
         2.0 * elems * 4);
  const int64_t classes = 32768, tokens = elems / classes;
  void *labels = scratch.get(tokens * sizeof(int64_t));
  cudaMemset(labels, 0, tokens * sizeof(int64_t));
  // Each call reads back the first bad label (a sync), as in a step.
  report("cross entropy, 64 MiB f32",
         gpuTime(s, 20,
                 [&] {
                   k->crossEntropy(l, portable::Elem::F32, portable::Elem::I64,
                                   x, labels, tokens, classes, z, temps.next());
                 }),
         1.0 * elems * 4);
  cudaStreamDestroy(s);
}
#endif

} // namespace

int main(int argc, char **argv) {
  // One thread on both sides: oneDNN and OpenBLAS would otherwise use every
  // core, and the host build's loops use one.
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  bool gpuOnly = argc > 1 && std::strcmp(argv[1], "--gpu-only") == 0;
  if (!gpuOnly)
    hostBench();
#if PC_HAVE_CUDA
  gpuBench();
#else
  std::printf("GPU part skipped: this build has no CUDA backend\n");
#endif
  return 0;
}
