//===- SbpNotation.h - Writing SBPs in tests as the IR does -----*- C++ -*-===//
//
// S(0), B and P(...) as C++ values, so that tests read like the IR.
//
//===----------------------------------------------------------------------===//

#ifndef PC_TEST_UNIT_SBPNOTATION_H
#define PC_TEST_UNIT_SBPNOTATION_H

#include "dialect/Sharding.h"

#include <vector>

namespace pc::sbp_notation {

using Shape = std::vector<int64_t>;
using NdSbp = std::vector<SbpEntry>;

inline SbpEntry S(int32_t d) { return SbpEntry::split(d); }
inline const SbpEntry B = SbpEntry::broadcast();
inline SbpEntry P(ReduceKind r = ReduceKind::Sum) {
  return SbpEntry::partial(r);
}

} // namespace pc::sbp_notation

#endif // PC_TEST_UNIT_SBPNOTATION_H
