//===- PcOps.h - pc operations ----------------------------------*- C++ -*-===//

#ifndef PC_DIALECT_PCOPS_H
#define PC_DIALECT_PCOPS_H

#include "dialect/InferTypes.h"
#include "dialect/PcAttrs.h"
#include "dialect/PcDialect.h"
#include "dialect/PcTraits.h"
#include "dialect/SbpSignature.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/PcInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialect/PcOps.h.inc"

#endif // PC_DIALECT_PCOPS_H
