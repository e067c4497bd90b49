//===- CudaPluginTest.cpp - The CUDA backend loads on first use -----------===//
//
// A program that runs on CPU devices never loads the CUDA backend's module
// or the CUDA libraries it brings (cuBLASLt alone cost half a second per
// process and 94 KiB of thread-local storage per thread). When a rank asks
// for a GPU, the module loads, and when it cannot, the error names what was
// tried. Runs without a GPU: the module loads and counts none.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Backend.h"
#include "runtime/exec/CpuExecutor.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "test/unit/PcContextTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <dlfcn.h>

using namespace mlir;
using pc::runtime::CommType;
using pc::runtime::HostTensor;

namespace {

/// Whether a file whose name contains `name` is mapped into this process.
bool mapped(const std::string &name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos)
      return true;
  return false;
}

/// Sets an environment variable for one test, restoring it after.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (previous)
      setenv(name, previous->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> previous;
};

/// The module stays loaded once loaded (RTLD_NODELETE), so the checks of
/// what is mapped hold in a process of their own (lit runs each test so);
/// run after a test that loaded it, they skip.
class CudaPluginTest : public pc::test::PcContextTest {
protected:
  void SetUp() override {
    loadedBefore = mapped("libpc-cuda.so");
    PcContextTest::SetUp();
  }
  bool loadedBefore = false;

  /// `text`, compiled by --pc-distribute.
  OwningOpRef<ModuleOp> distributed(const char *text) {
    OwningOpRef<ModuleOp> m = parseSourceString<ModuleOp>(text, &context);
    if (!m)
      return nullptr;
    PassManager pm = PassManager::on<ModuleOp>(&context);
    if (failed(parsePassPipeline("pc-distribute", pm)) || failed(pm.run(*m)))
      return nullptr;
    return m;
  }
};

TEST_F(CudaPluginTest, CpuRunsLoadNoCuda) {
  OwningOpRef<ModuleOp> m = distributed(R"(
    pc.mesh @m <["x"=2]>
    func.func @f(%a: tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>)
        -> tensor<4x2xf32, #pc.sbp<@m, [S(0)]>> {
      %r = pc.relu %a : (tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>)
          -> tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>
      return %r : tensor<4x2xf32, #pc.sbp<@m, [S(0)]>>
    })");
  ASSERT_TRUE(m);
  if (loadedBefore)
    GTEST_SKIP() << "an earlier test in this process loaded the module";
  HostTensor a = HostTensor::zeros({4, 2}, CommType::F32);
  for (int64_t i = 0; i < 8; ++i)
    a.as<float>()[i] = static_cast<float>(i % 3) - 1;
  absl::StatusOr<pc::runtime::CpuRun> run =
      pc::runtime::runOnCpu(*m, "f", {a}, 0);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->results[0].as<float>()[0], 0.0f);
  EXPECT_EQ(run->results[0].as<float>()[1], 0.0f);
  EXPECT_EQ(run->results[0].as<float>()[2], 1.0f);
  EXPECT_FALSE(mapped("libpc-cuda.so"));
  EXPECT_FALSE(mapped("libcublasLt"));
  EXPECT_FALSE(mapped("libcudart"));
  EXPECT_FALSE(mapped("libnccl"));
}

#if PC_HAVE_CUDA

TEST_F(CudaPluginTest, LoadsOnFirstUse) {
  if (loadedBefore)
    GTEST_SKIP() << "an earlier test in this process loaded the module";
  // Without a GPU the module still loads and counts none.
  absl::StatusOr<int> gpus = pc::runtime::visibleCudaDevices();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_GE(*gpus, 0);
  EXPECT_TRUE(mapped("libpc-cuda.so"));
  EXPECT_TRUE(mapped("libcublasLt"));
}

TEST_F(CudaPluginTest, AMissingModuleIsNamed) {
  ScopedEnv env("PC_CUDA_PLUGIN", "/nonexistent/libpc-cuda.so");
  absl::StatusOr<int> gpus = pc::runtime::visibleCudaDevices();
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("/nonexistent/libpc-cuda.so: no "
                                         "such file"),
            std::string::npos)
      << gpus.status();
  EXPECT_NE(gpus.status().message().find("PC_CUDA_PLUGIN"), std::string::npos)
      << gpus.status();
  if (!loadedBefore)
    EXPECT_FALSE(mapped("libcublasLt"));
}

TEST_F(CudaPluginTest, AForeignLibraryIsRefused) {
  // libm: a shared library without the module's entry point.
  Dl_info info;
  double (*cosine)(double) = &std::cos;
  ASSERT_NE(dladdr(reinterpret_cast<void *>(cosine), &info), 0);
  ScopedEnv env("PC_CUDA_PLUGIN", info.dli_fname);
  absl::StatusOr<int> gpus = pc::runtime::visibleCudaDevices();
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("has no pc_cuda_plugin"),
            std::string::npos)
      << gpus.status();
}

TEST_F(CudaPluginTest, AModuleOfAnotherBuildIsRefused) {
  ScopedEnv env("PC_CUDA_PLUGIN", PC_STALE_CUDA_PLUGIN);
  absl::StatusOr<int> gpus = pc::runtime::visibleCudaDevices();
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find(
                "a module of another pc build (interface 0123456789ab"),
            std::string::npos)
      << gpus.status();
}

TEST_F(CudaPluginTest, ARankOnAGpuWithoutOneFailsClearly) {
  OwningOpRef<ModuleOp> m = distributed(R"(
    pc.mesh @g <["x"=1]> on cuda
    func.func @f(%a: tensor<2xf32, #pc.sbp<@g, [B]>>)
        -> tensor<2xf32, #pc.sbp<@g, [B]>> {
      %r = pc.relu %a : (tensor<2xf32, #pc.sbp<@g, [B]>>)
          -> tensor<2xf32, #pc.sbp<@g, [B]>>
      return %r : tensor<2xf32, #pc.sbp<@g, [B]>>
    })");
  ASSERT_TRUE(m);
  absl::StatusOr<int> gpus = pc::runtime::visibleCudaDevices();
  if (gpus.ok() && *gpus > 0)
    GTEST_SKIP() << "this machine has a GPU";
  HostTensor a = HostTensor::zeros({2}, CommType::F32);
  absl::StatusOr<pc::runtime::CpuRun> run =
      pc::runtime::runOnCpu(*m, "f", {a}, 0);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("rank 0 runs on a CUDA device, and "
                                        "this process sees none"),
            std::string::npos)
      << run.status();
}

#endif

} // namespace
