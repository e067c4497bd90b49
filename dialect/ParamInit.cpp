//===- ParamInit.cpp - The values #pc.init describes ----------------------===//

#include "dialect/ParamInit.h"

#include <cmath>
#include <random>

namespace pc {
namespace {

uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

} // namespace

std::vector<double> initialValues(ParamOp param, uint64_t seed) {
  auto type = mlir::cast<mlir::RankedTensorType>(param.getType());
  std::vector<double> values(type.getNumElements());
  InitAttr init = param.getInit();
  std::mt19937_64 rng(seed ^ fnv1a(param.getSymName()));
  double x = init.getFirst(), y = init.getSecond();
  for (double &v : values) {
    switch (init.getKind()) {
    case InitKind::zeros:
      v = 0;
      break;
    case InitKind::ones:
      v = 1;
      break;
    case InitKind::constant:
      v = x;
      break;
    case InitKind::normal:
      v = std::normal_distribution<double>(x, y)(rng);
      break;
    case InitKind::truncated_normal:
      do
        v = std::normal_distribution<double>(x, y)(rng);
      while (std::abs(v - x) > 2 * y);
      break;
    case InitKind::uniform:
      v = std::uniform_real_distribution<double>(x, y)(rng);
      break;
    }
  }
  return values;
}

} // namespace pc
