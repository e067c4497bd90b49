//===- Interpreter.h - Reference execution of pc programs -------*- C++ -*-===//
//
// Runs pc IR on simulated devices, in double precision, to check the
// compiler: a logical graph runs as if on one device (layouts ignored), and
// its per-device programs (after --pc-distribute) run one thread per rank,
// with collectives that move data between the simulated devices by what each
// step means. Assembling the per-device results must give the logical
// results. This is the oracle for the compiler's tests and, later, for the
// actor runtime; it is not the runtime (no kernels tuned for speed, no
// streams).
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_REFERENCE_INTERPRETER_H
#define PC_RUNTIME_REFERENCE_INTERPRETER_H

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pc::reference {

/// A dense row-major tensor of doubles (integers are held exactly).
struct Array {
  std::vector<int64_t> shape;
  std::vector<double> data;

  static Array zeros(std::vector<int64_t> shape);
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

/// What a collective moved, per global rank.
struct Traffic {
  std::map<int64_t, int64_t> bytesReceived;
  std::map<std::string, int64_t> collectives; // per kind
};

/// Runs the logical graph `graph` of `module` on one device with
/// `inputs` (one per argument, logical shapes). Parameters are initialized
/// from their #pc.init with `seed`, except those given in `params` (by
/// name, logical shapes). The values the graph stores with pc.set_param go
/// to `updates`, when given.
absl::StatusOr<std::vector<Array>>
runLogical(mlir::ModuleOp module, llvm::StringRef graph,
           const std::vector<Array> &inputs, uint64_t seed,
           const std::map<std::string, Array> *params = nullptr,
           std::map<std::string, Array> *updates = nullptr);

/// Runs the per-device programs of `graph` (functions with pc.graph = graph)
/// on their ranks, feeding each rank its pieces of the logical `inputs`, and
/// assembles the logical results (partials reduced, splits concatenated).
/// Counts the bytes each rank received in collectives into `traffic`.
absl::StatusOr<std::vector<Array>>
runDistributed(mlir::ModuleOp module, llvm::StringRef graph,
               const std::vector<Array> &inputs, uint64_t seed,
               Traffic *traffic = nullptr);

/// The bound below which the ids of `graph`'s integer input `arg` must stay:
/// the smallest table, class count or one-hot width among the lookups and
/// losses that read it (through reshapes, slices, transposes and
/// concatenations); nothing when none reads it.
std::optional<int64_t> idBound(mlir::BlockArgument arg);

/// Random inputs for `graph`: floats uniform in [-1, 1], integers valid for
/// the lookups and losses that read them (below idBound, or 2^20).
/// Deterministic in `seed`.
absl::StatusOr<std::vector<Array>>
randomInputs(mlir::ModuleOp module, llvm::StringRef graph, uint64_t seed);

/// The largest difference between `actual` and `expected`, relative to
/// 1 + |expected|, or an error when their shapes differ.
absl::StatusOr<double> maxRelativeError(const std::vector<Array> &actual,
                                        const std::vector<Array> &expected);

/// What checkCompiled measured.
struct CheckResult {
  double maxRelativeError = 0;
  Traffic traffic;
};

/// Parses `source` twice; runs `graph` of the first as a logical program
/// and, after running `pipeline` on the second, its per-device programs, on
/// random inputs (randomInputs) and parameters from `seed`; compares.
absl::StatusOr<CheckResult>
checkCompiled(mlir::MLIRContext &context, llvm::StringRef source,
              llvm::StringRef graph, llvm::StringRef pipeline, uint64_t seed);

/// The logical value of parameter `name` (its initializer), deterministic in
/// `seed` and the name.
absl::StatusOr<Array> initialParam(mlir::ModuleOp module, llvm::StringRef name,
                                   uint64_t seed);

} // namespace pc::reference

#endif // PC_RUNTIME_REFERENCE_INTERPRETER_H
