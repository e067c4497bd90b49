//===- PortableComm.cpp - Collectives' copies on a device's memory --------===//

#include "runtime/exec/PortableComm.h"

#include "runtime/comm/BoxingSteps.h"
#include "runtime/exec/PortableBinding.h"

namespace pc::runtime {
namespace {

using namespace portable_binding;

class DeviceStepMemory final : public StepMemory {
public:
  DeviceStepMemory(const KernelIO &io, std::shared_ptr<DeviceKernels> kernels)
      : context(io.context), launch(launchOf(io)), kernels(std::move(kernels)) {
  }

  absl::StatusOr<char *> scratch(size_t bytes) override {
    absl::StatusOr<std::shared_ptr<Tensor>> t = context.allocate(
        {static_cast<int64_t>(std::max<size_t>(bytes, 1))}, CommType::U8);
    if (!t.ok())
      return t.status();
    held.push_back(*t);
    return (*t)->data();
  }

  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes)
      kernels->copy(launch, dst, src, bytes);
  }

  void copyBox(const char *src, std::span<const int64_t> srcShape,
               std::span<const int64_t> srcOffset, char *dst,
               std::span<const int64_t> dstShape,
               std::span<const int64_t> dstOffset,
               std::span<const int64_t> sizes, int64_t elementBytes) override {
    Shape box(sizes.begin(), sizes.end());
    int64_t n = product(box);
    if (n == 0)
      return;
    auto base = [](std::span<const int64_t> shape,
                   std::span<const int64_t> offset, Shape &strides) {
      strides = stridesOf(Shape(shape.begin(), shape.end()));
      int64_t b = 0;
      for (size_t d = 0; d < offset.size(); ++d)
        b += offset[d] * strides[d];
      return b;
    };
    Shape ss, ds;
    int64_t from = base(srcShape, srcOffset, ss),
            to = base(dstShape, dstOffset, ds);
    kernels->copyIndexed(launch, elementBytes, src, from, indexOf(box, ss), dst,
                         to, indexOf(box, ds), n);
  }

  void zero(void *dst, size_t bytes) override {
    if (bytes)
      kernels->zero(launch, dst, bytes);
  }

private:
  const KernelContext &context;
  Launch launch;
  std::shared_ptr<DeviceKernels> kernels;
  std::vector<std::shared_ptr<Tensor>> held;
};

} // namespace

CommMemory
portableCommMemory(std::shared_ptr<portable::DeviceKernels> kernels) {
  CommMemory m;
  m.forFiring = [kernels](const KernelIO &io) -> std::unique_ptr<StepMemory> {
    return std::make_unique<DeviceStepMemory>(io, kernels);
  };
  m.fromHost = [kernels](void *dst, const void *src, size_t bytes) {
    kernels->fromHost(dst, src, bytes);
  };
  return m;
}

} // namespace pc::runtime
