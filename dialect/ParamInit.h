//===- ParamInit.h - The values #pc.init describes --------------*- C++ -*-===//
//
// What a parameter's initializer means, as numbers: part of the IR's
// semantics, so that every consumer (the executor, the reference
// interpreter, checkpoints of untouched parameters) starts a parameter from
// the same values for the same seed.
//
//===----------------------------------------------------------------------===//

#ifndef PC_DIALECT_PARAMINIT_H
#define PC_DIALECT_PARAMINIT_H

#include "dialect/PcOps.h"

#include <cstdint>
#include <vector>

namespace pc {

/// The initial value of `param`, row-major, in double: its #pc.init drawn
/// from std::mt19937_64 seeded with `seed` xor the FNV-1a hash of the
/// parameter's name (so that adding a parameter changes no other one).
std::vector<double> initialValues(ParamOp param, uint64_t seed);

} // namespace pc

#endif // PC_DIALECT_PARAMINIT_H
