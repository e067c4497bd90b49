//===- PcDialect.h - The pc dialect -----------------------------*- C++ -*-===//

#ifndef PC_DIALECT_PCDIALECT_H
#define PC_DIALECT_PCDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

#include "dialect/PcDialect.h.inc"

#endif // PC_DIALECT_PCDIALECT_H
