//===- OpProfile.h - Measured kernel times, by op ---------------*- C++ -*-===//
//
// vTrain's method: rather than a roofline, the time of every distinct
// compute op of a plan's per-device programs as this machine's kernels take
// it, measured on one device with nothing else running, each program's
// ops fired in its order (runtime/exec/OpProfiler.h). The
// simulator (passes/planning/ProgramSimulator.h) uses a measured time where
// it has one. Ops are keyed by what decides their kernel's work: the op's
// name, its inherent attributes, and its operand and result types; two ops
// with one key run the same kernel on the same shapes.
//
// A profile is a JSON file:
//   {"device": "cpu", "threads": 1,
//    "ops": {"<key>": seconds, ...}}
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_OPPROFILE_H
#define PC_DIALECT_OPPROFILE_H

#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace pc {

/// The key of `op` in a profile.
std::string opProfileKey(mlir::Operation *op);

struct OpProfile {
  /// The device kind and the threads each kernel ran with.
  std::string device = "cpu";
  int64_t threads = 1;
  /// Seconds per firing, by opProfileKey.
  std::map<std::string, double> seconds;

  /// The measured time of `op`, or a negative value when there is none.
  double lookup(mlir::Operation *op) const;
};

std::string formatOpProfile(const OpProfile &profile);
/// An error names `source` and what is wrong.
llvm::Expected<OpProfile> parseOpProfile(llvm::StringRef json,
                                         llvm::StringRef source);
llvm::Expected<OpProfile> loadOpProfile(llvm::StringRef path);

} // namespace pc

#endif // PC_DIALECT_OPPROFILE_H
