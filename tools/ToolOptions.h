//===- ToolOptions.h - What a pc tool's --help shows ------------*- C++ -*-===//
//
// LLVM and MLIR register hundreds of internal flags (code generators,
// debugging switches) when their libraries load. A pc tool's --help lists
// the tool's own options, grouped by category, and nothing else: each tool
// hides what the libraries registered before it declares its own options.
// The hidden flags still parse, and --help-hidden lists them, for the rare
// debugging session that needs one.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TOOLS_TOOLOPTIONS_H
#define PC_TOOLS_TOOLOPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace pc::tools {

/// Hides every option registered so far, except --help and --version. Call
/// it first in main, before the tool's options exist.
inline void hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    if (name != "help" && name != "version")
      entry.second->setHiddenFlag(llvm::cl::Hidden);
  }
}

} // namespace pc::tools

#endif // PC_TOOLS_TOOLOPTIONS_H
