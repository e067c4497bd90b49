//===- SbpSignature.cpp - SBP signatures of logical ops -------------------===//

#include "dialect/SbpSignature.h"

namespace pc {

bool SbpSignature::isReplicated() const {
  auto isB = [](SbpEntry e) { return e.isBroadcast(); };
  return llvm::all_of(operands, isB) && llvm::all_of(results, isB);
}

std::string SbpSignature::str() const {
  std::string s = "(";
  for (size_t i = 0; i < operands.size(); ++i)
    s += (i ? ", " : "") + operands[i].str();
  s += ") -> ";
  if (results.size() != 1)
    s += "(";
  for (size_t i = 0; i < results.size(); ++i)
    s += (i ? ", " : "") + results[i].str();
  if (results.size() != 1)
    s += ")";
  return s;
}

void addReplicated(llvm::SmallVectorImpl<SbpSignature> &out,
                   unsigned numOperands, unsigned numResults) {
  SbpSignature sig;
  sig.operands.assign(numOperands, SbpEntry::broadcast());
  sig.results.assign(numResults, SbpEntry::broadcast());
  out.push_back(std::move(sig));
}

std::string NdSbpSignature::str() const {
  std::string s = "(";
  for (size_t i = 0; i < operands.size(); ++i)
    s += (i ? ", " : "") + formatNdSbp(operands[i]);
  s += ") -> ";
  for (size_t i = 0; i < results.size(); ++i)
    s += (i ? ", " : "") + formatNdSbp(results[i]);
  return s;
}

} // namespace pc
