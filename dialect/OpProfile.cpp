//===- OpProfile.cpp - Measured kernel times, by op -----------------------===//

#include "dialect/OpProfile.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace pc {

std::string opProfileKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName().getStringRef();
  // Inherent attributes only: discardable ones (pc.action, names) differ
  // between ops that run the same kernel.
  if (op->getPropertiesStorageSize()) {
    if (Attribute props = op->getPropertiesAsAttribute())
      os << " " << props;
  } else {
    for (NamedAttribute a : op->getAttrs())
      if (!a.getName().getValue().contains('.'))
        os << " " << a.getName().getValue() << "=" << a.getValue();
  }
  os << " (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ") -> (";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ")";
  return key;
}

double OpProfile::lookup(Operation *op) const {
  auto it = seconds.find(opProfileKey(op));
  return it == seconds.end() ? -1 : it->second;
}

std::string formatOpProfile(const OpProfile &profile) {
  llvm::json::Object ops;
  for (const auto &[key, s] : profile.seconds)
    ops[key] = s;
  llvm::json::Object top{{"device", profile.device},
                         {"threads", profile.threads},
                         {"ops", std::move(ops)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  return out;
}

llvm::Expected<OpProfile> parseOpProfile(llvm::StringRef json,
                                         llvm::StringRef source) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   source + ": " + why);
  };
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value)
    return fail("not JSON: " + llvm::toString(value.takeError()));
  const llvm::json::Object *top = value->getAsObject();
  if (!top)
    return fail("an op profile is a JSON object");
  OpProfile profile;
  if (std::optional<llvm::StringRef> d = top->getString("device"))
    profile.device = d->str();
  else
    return fail("'device' must be a string");
  std::optional<int64_t> threads = top->getInteger("threads");
  if (!threads || *threads < 1)
    return fail("'threads' must be a positive integer");
  profile.threads = *threads;
  const llvm::json::Object *ops = top->getObject("ops");
  if (!ops)
    return fail("'ops' must be an object of seconds by op");
  for (const auto &[key, v] : *ops) {
    std::optional<double> s = v.getAsNumber();
    if (!s || !(*s >= 0))
      return fail("the time of '" + key.str() +
                  "' must be a non-negative number of seconds");
    profile.seconds[key.str()] = *s;
  }
  return profile;
}

llvm::Expected<OpProfile> loadOpProfile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   path + ": " + buffer.getError().message());
  return parseOpProfile((*buffer)->getBuffer(), path);
}

} // namespace pc
