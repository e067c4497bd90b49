//===- OpProfiler.cpp - Timing a plan's kernels alone, by op --------------===//

#include "runtime/exec/OpProfiler.h"

#include "boxing/MeshCache.h"
#include "dialect/ProgramAttrs.h"
#include "runtime/comm/World.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/exec/KernelRegistry.h"

#include "absl/strings/str_cat.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

using namespace mlir;

namespace pc::runtime {
namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Inputs of every operand type of `op`; nothing when one is not a tensor.
std::optional<std::vector<std::shared_ptr<const Tensor>>>
sampleOperands(Operation *op, TensorAllocator &tensors) {
  std::vector<std::shared_ptr<const Tensor>> out;
  for (Type t : op->getOperandTypes()) {
    if (!isa<RankedTensorType>(t))
      return std::nullopt;
    absl::StatusOr<CommType> type = commTypeOf(t);
    if (!type.ok())
      return std::nullopt;
    absl::StatusOr<std::shared_ptr<Tensor>> z =
        tensors.allocate(shapeOf(t), *type);
    if (!z.ok())
      return std::nullopt;
    // Small values, not zeros: a kernel's time on zeros need not be its
    // time on data (integers stay 0, a valid index and label).
    std::memset((*z)->data(), 0, (*z)->byteSize());
    if (*type == CommType::F32) {
      float *f = (*z)->as<float>();
      for (int64_t i = 0, n = (*z)->numel(); i < n; ++i)
        f[i] = float(i % 17) / 17.0f - 0.5f;
    }
    out.push_back(*std::move(z));
  }
  return out;
}

using Inputs = std::vector<std::shared_ptr<const Tensor>>;

/// The median time of firing `kernel` on each of `sets` in turn; an error
/// when it fails.
absl::StatusOr<double> timeKernel(const Kernel &kernel,
                                  const KernelContext &context,
                                  const std::vector<Inputs> &sets,
                                  size_t results,
                                  const OpProfilerOptions &options) {
  std::vector<std::vector<const Tensor *>> raw;
  for (const Inputs &set : sets) {
    raw.emplace_back();
    for (const auto &t : set)
      raw.back().push_back(t.get());
  }
  std::vector<double> times;
  size_t turn = 0;
  auto fire = [&]() -> absl::Status {
    std::vector<std::shared_ptr<const Tensor>> out(results);
    size_t i = turn++ % sets.size();
    KernelIO io{context, raw[i], sets[i], out};
    return kernel(io);
  };
  // A kernel's error stays here: it would poison the stream for the rest.
  absl::Status failed;
  context.stream().enqueue([&]() -> absl::Status {
    if (failed = fire(); !failed.ok()) // warm-up
      return absl::OkStatus();
    double spent = 0;
    while (int(times.size()) < options.maxFirings &&
           (int(times.size()) < options.minFirings ||
            spent < options.minSeconds)) {
      double t0 = now();
      if (failed = fire(); !failed.ok())
        return absl::OkStatus();
      times.push_back(now() - t0);
      spent += times.back();
    }
    return absl::OkStatus();
  });
  if (absl::Status s = context.stream().synchronize(); !s.ok())
    return s;
  if (!failed.ok())
    return failed;
  std::nth_element(times.begin(), times.begin() + times.size() / 2,
                   times.end());
  return times[times.size() / 2];
}

} // namespace

absl::StatusOr<OpProfile> profileOps(ModuleOp module,
                                     const OpProfilerOptions &options) {
  OpProfile profile;
  profile.device = "cpu";
  profile.threads = std::max(1, options.threads);
  KernelRegistry kernels;
  registerCpuComputeKernels(kernels);
  CpuDevice device(0, /*capacity=*/0, profile.threads, "cpu");
  absl::StatusOr<std::unique_ptr<Stream>> stream =
      device.createStream("profile");
  if (!stream.ok())
    return stream.status();
  TensorAllocator tensors(device);
  KernelContext context(tensors, **stream);
  // Compute kernels never talk; binding still wants an endpoint.
  std::unique_ptr<World> world = makeInProcessWorld();
  if (absl::Status s = world->beginRun(1); !s.ok())
    return s;
  absl::StatusOr<std::unique_ptr<Communicator>> comm = world->endpoint(0);
  if (!comm.ok())
    return comm.status();
  MeshCache meshes(module);
  // Two rounds over all ops, keeping each op's faster median: a stall of
  // the machine (another process) during one op's few milliseconds then
  // does not stand as its time.
  for (int round = 0; round < 2; ++round) {
    std::set<std::string> tried;
    for (auto f : module.getOps<func::FuncOp>()) {
      llvm::ArrayRef<int64_t> ranks = attrs::getRanks(f);
      if (f.isExternal() || ranks.empty())
        continue;
      StringAttr g = attrs::getGraph(f);
      if (!options.graph.empty() && (!g || g.getValue() != options.graph))
        continue;
      BindContext bind{ranks.front(), meshes, **comm, tensors};
      for (Operation &op : f.getBody().getOps()) {
        std::string key = opProfileKey(&op);
        if (!tried.insert(key).second)
          continue;
        absl::StatusOr<KernelRegistry::Bound> bound = kernels.bind(&op, bind);
        if (!bound.ok() || bound->stream != StreamKind::Compute)
          continue;
        // Copies of the inputs, fired in turn, so that a firing does not
        // find its inputs in the cache the last one left them in (in a
        // step, the ops between two firings of a kernel evict them).
        std::vector<Inputs> sets;
        int64_t bytes = 0;
        for (Type t : op.getOperandTypes())
          if (absl::StatusOr<CommType> c = commTypeOf(t); c.ok())
            bytes += product(shapeOf(t)) * sizeOf(*c);
        int64_t copies = std::clamp<int64_t>(options.evictBytes /
                                                 std::max<int64_t>(1, bytes),
                                             1, options.maxInputCopies);
        for (int64_t c = 0; c < copies; ++c)
          if (auto inputs = sampleOperands(&op, tensors))
            sets.push_back(*std::move(inputs));
        if (sets.empty())
          continue;
        absl::StatusOr<double> t = timeKernel(bound->kernel, context, sets,
                                              op.getNumResults(), options);
        if (!t.ok())
          continue;
        auto [it, fresh] = profile.seconds.try_emplace(key, *t);
        if (!fresh)
          it->second = std::min(it->second, *t);
      }
    }
  }
  return profile;
}

} // namespace pc::runtime
