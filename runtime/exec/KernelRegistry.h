//===- KernelRegistry.h - Kernels by op, element type, device ---*- C++ -*-===//
//
// The kernels of the backends, looked up by op name, element type and
// device kind ("cpu", "cuda": Device::kind() of the rank's device, which the
// mesh's device kind chose). A
// registry entry is a factory: given one op of a per-device program, it
// reads the op's attributes and types once and returns a bound kernel, a
// plain function of input tensors to output tensors that the actor runs at
// every firing without touching the IR again. Tensors live in the device's
// memory (runtime/device/Tensor.h); a kernel gets its outputs from the
// KernelContext (runtime/exec/KernelContext.h). An op that has no entry for
// its element type is an error at bind time, before anything runs.
//
// Entries say which stream their kernels run on: compute, or communication
// (collectives, send/recv), which the actor core orders identically on
// every rank.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_KERNELREGISTRY_H
#define PC_RUNTIME_EXEC_KERNELREGISTRY_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/Tensor.h"
#include "runtime/exec/KernelContext.h"
#include "runtime/exec/OrderCheck.h"

#include "absl/status/statusor.h"
#include "mlir/IR/Operation.h"

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>

namespace pc {
class MeshCache;
struct OpProfile;
} // namespace pc

namespace pc::runtime {

/// What a bound kernel reads and writes at one firing.
struct KernelIO {
  /// The device, the stream, and where outputs come from.
  const KernelContext &context;
  std::span<const Tensor *const> inputs;
  /// The same inputs as shared references, for kernels that pass an input
  /// on unchanged.
  std::span<const std::shared_ptr<const Tensor>> sharedInputs;
  /// One per result; a kernel may share a tensor it does not change.
  std::span<std::shared_ptr<const Tensor>> outputs;
};

using Kernel = std::function<absl::Status(KernelIO &)>;

/// Where a kernel runs: compute, collectives, or copies between host and
/// device memory (CPU offload), each on a stream of its own.
enum class StreamKind : uint8_t { Compute, Comm, Copy };

/// What binding knows of the device it binds for.
struct BindContext {
  int64_t rank;
  MeshCache &meshes;
  Communicator &comm;
  /// The rank's device memory, for tensors made at bind time (constants).
  TensorAllocator &tensors;
  /// The rank's host memory, for what ops marked pc.host make (CPU
  /// offload); null: the device's.
  TensorAllocator *hostTensors = nullptr;
  /// Per (from, to) layout pair: transfers bound so far, for send/recv tags.
  std::map<std::string, int64_t> transfers;
  /// Set while a widening entry binds its f32 kernel: results of a 16-bit
  /// float type are then allocated as f32 (see resultType()).
  bool widen = false;
  /// What the communication kernel being bound exchanges (its group, or its
  /// messages), for checking ranks' orders together (OrderCheck.h).
  CommEvent exchange;
  /// Emulated compute (EmulatedCompute.h): compute ops with a time here
  /// bind as waits of that time; null: every op runs its kernel.
  const OpProfile *emulated = nullptr;
};

/// The element type a kernel bound in `context` produces for a result of
/// type `tensorType`: f32 in place of f16/bf16 while widening.
absl::StatusOr<CommType> resultType(mlir::Type tensorType,
                                    const BindContext &context);

using KernelFactory =
    std::function<absl::StatusOr<Kernel>(mlir::Operation *, BindContext &)>;

class KernelRegistry {
public:
  struct Bound {
    Kernel kernel;
    StreamKind stream;
    /// For a communication op: what it exchanges.
    CommEvent exchange;
  };

  /// Registers `factory` for `op` ("pc.matmul") on each of `types`, on
  /// devices of kind `device` ("cpu").
  void add(llvm::StringRef device, llvm::StringRef op,
           std::initializer_list<CommType> types, StreamKind stream,
           KernelFactory factory);

  /// The kernel of `op` for its element type (that of its first result, or
  /// of its first operand when it has no result) on the kind of
  /// `context.tensors.device()`. Unimplemented, naming the op, the type and
  /// the device kind, when there is none.
  absl::StatusOr<Bound> bind(mlir::Operation *op, BindContext &context) const;

private:
  struct Entry {
    StreamKind stream;
    KernelFactory factory;
  };
  std::map<std::tuple<std::string, std::string, CommType>, Entry> entries;
};

/// The element type of a tensor type, or Unimplemented naming it.
absl::StatusOr<CommType> commTypeOf(mlir::Type tensorType);

/// The shape of a ranked tensor type.
std::vector<int64_t> shapeOf(mlir::Type tensorType);

/// Every element type the IR allows: for kernels that only move bytes.
inline constexpr std::initializer_list<CommType> kAllTypes = {
    CommType::F32, CommType::F16, CommType::BF16, CommType::I32, CommType::I64};

/// The CPU backend's kernels (device kind "cpu"): every logical op and the
/// per-device ops that partitioning emits.
void registerCpuComputeKernels(KernelRegistry &registry);
/// On host-addressable memory: the CPU devices' (kind "cpu").
void registerCpuCommKernels(KernelRegistry &registry,
                            llvm::StringRef kind = "cpu");

class StepMemory;
/// How the communication kernels reach their device's memory: the copies
/// around each collective (runtime/comm/BoxingSteps.h), and bytes written
/// from the host into a tensor made at bind time.
struct CommMemory {
  std::function<std::unique_ptr<StepMemory>(const KernelIO &)> forFiring;
  std::function<void(void *dst, const void *src, size_t bytes)> fromHost;
};
/// The communication ops' kernels for devices of kind `kind`.
void registerCommKernels(KernelRegistry &registry, llvm::StringRef kind,
                         CommMemory memory);

/// The kernels of ops that only make views (pc.reshape, pc.after), which
/// touch no memory, for devices of kind `kind`.
void registerViewKernels(KernelRegistry &registry, llvm::StringRef kind);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_KERNELREGISTRY_H
