//===- ProgramInterface.h - The inputs and outputs of a compiled graph ----===//
//
// What a runner needs to feed and read a graph's per-device programs, from
// the argument and result attributes partition writes: each input's and
// output's logical index, logical type and pc.name, and which ones are the
// training step's rate (`lr`), loss ({pc.loss}) and gradient norm.
//
//===----------------------------------------------------------------------===//

#ifndef PC_RUNTIME_EXEC_PROGRAMINTERFACE_H
#define PC_RUNTIME_EXEC_PROGRAMINTERFACE_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace pc::runtime {

struct Port {
  mlir::Type logical; // with its layout
  std::string name;   // pc.name, or empty
};

struct ProgramInterface {
  std::map<int64_t, Port> inputs, outputs; // by logical index
  std::optional<int64_t> lr, loss, gradNorm;

  /// The port's name, or argN / outN when it has none.
  static std::string nameOf(int64_t index, const Port &port, bool input) {
    if (!port.name.empty())
      return port.name;
    return (input ? "arg" : "out") + std::to_string(index);
  }
};

/// The interface of the per-device programs of `graph` in `module`.
ProgramInterface interfaceOf(mlir::ModuleOp module, llvm::StringRef graph);

} // namespace pc::runtime

#endif // PC_RUNTIME_EXEC_PROGRAMINTERFACE_H
