//===- OpProfiler.cpp - Timing a plan's kernels in sequence -------------===//

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
#include <map>

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

/// One compute op of a program, bound to its kernel as the runtime binds
/// it, with inputs of its operand types (shared by the ops of one key).
struct Instance {
  std::string key;
  Kernel kernel;
  std::shared_ptr<const Inputs> inputs;
  std::vector<const Tensor *> raw;
  size_t results = 0;
  bool failed = false;
};

/// Fires `program`'s ops in its order, pass after pass, on the stream of
/// `context`, and adds each firing's seconds to `samples` under its key.
/// With `warmUp`, a first pass is not timed (kernels make their plans on
/// their first call); an op whose kernel fails is left out from then on.
absl::Status timePasses(std::vector<Instance> &program, bool warmUp,
                        const KernelContext &context,
                        const OpProfilerOptions &options,
                        std::map<std::string, std::vector<double>> &samples) {
  auto fire = [&](Instance &op) -> absl::Status {
    std::vector<std::shared_ptr<const Tensor>> out(op.results);
    KernelIO io{context, op.raw, *op.inputs, out};
    return op.kernel(io);
  };
  // A kernel's error stays here: it would poison the stream for the rest.
  context.stream().enqueue([&]() -> absl::Status {
    if (warmUp)
      for (Instance &op : program)
        op.failed = !fire(op).ok();
    double spent = 0;
    for (int pass = 0; pass < options.maxPasses &&
                       (pass < options.minPasses || spent < options.minSeconds);
         ++pass) {
      for (Instance &op : program) {
        if (op.failed)
          continue;
        double t0 = now();
        if (!fire(op).ok()) {
          op.failed = true;
          continue;
        }
        double t = now() - t0;
        samples[op.key].push_back(t);
        spent += t;
      }
    }
    return absl::OkStatus();
  });
  return context.stream().synchronize();
}

double median(std::vector<double> &v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
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
  std::map<std::string, std::shared_ptr<const Inputs>> inputsOf;
  std::vector<std::vector<Instance>> programs;
  for (auto f : module.getOps<func::FuncOp>()) {
    llvm::ArrayRef<int64_t> ranks = attrs::getRanks(f);
    if (f.isExternal() || ranks.empty())
      continue;
    StringAttr g = attrs::getGraph(f);
    if (!options.graph.empty() && (!g || g.getValue() != options.graph))
      continue;
    BindContext bind{ranks.front(), meshes, **comm, tensors};
    std::vector<Instance> &program = programs.emplace_back();
    for (Operation &op : f.getBody().getOps()) {
      std::string key = opProfileKey(&op);
      absl::StatusOr<KernelRegistry::Bound> bound = kernels.bind(&op, bind);
      if (!bound.ok() || bound->stream != StreamKind::Compute)
        continue;
      auto [it, fresh] = inputsOf.try_emplace(key);
      if (fresh)
        if (auto inputs = sampleOperands(&op, tensors))
          it->second = std::make_shared<const Inputs>(*std::move(inputs));
      if (!it->second)
        continue;
      Instance i{
          key, std::move(bound->kernel), it->second, {}, op.getNumResults()};
      for (const auto &t : *i.inputs)
        i.raw.push_back(t.get());
      program.push_back(std::move(i));
    }
  }
  // Rounds over all programs, keeping each key's fastest median: a stall
  // of the machine (another process) during one round then does not stand
  // as its time.
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    std::map<std::string, std::vector<double>> samples;
    for (std::vector<Instance> &program : programs)
      if (absl::Status s =
              timePasses(program, round == 0, context, options, samples);
          !s.ok())
        return s;
    for (auto &[key, times] : samples) {
      double t = median(times);
      auto [it, fresh] = profile.seconds.try_emplace(key, t);
      if (!fresh)
        it->second = std::min(it->second, t);
    }
  }
  // A key whose kernel failed on any op is left out: the simulator times
  // it by the roofline.
  for (const std::vector<Instance> &program : programs)
    for (const Instance &op : program)
      if (op.failed)
        profile.seconds.erase(op.key);
  return profile;
}

} // namespace pc::runtime
