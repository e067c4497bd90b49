//===- KernelRegistry.cpp - Kernels by op and element type ----------------===//

#include "runtime/exec/KernelRegistry.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace pc::runtime {

std::vector<int64_t> shapeOf(Type tensorType) {
  auto s = cast<RankedTensorType>(tensorType).getShape();
  return std::vector<int64_t>(s.begin(), s.end());
}

absl::StatusOr<CommType> commTypeOf(Type tensorType) {
  Type e = cast<RankedTensorType>(tensorType).getElementType();
  if (e.isF32())
    return CommType::F32;
  if (e.isF16())
    return CommType::F16;
  if (e.isBF16())
    return CommType::BF16;
  if (e.isInteger(64))
    return CommType::I64;
  if (e.isInteger(32))
    return CommType::I32;
  if (e.isUnsignedInteger(8))
    return CommType::U8;
  if (e.isF64())
    return CommType::F64;
  std::string name;
  llvm::raw_string_ostream os(name);
  os << e;
  return absl::UnimplementedError(
      absl::StrCat("the runtime has no tensors of ", name));
}

absl::StatusOr<CommType> resultType(Type tensorType,
                                    const BindContext &context) {
  absl::StatusOr<CommType> type = commTypeOf(tensorType);
  if (type.ok() && context.widen &&
      (*type == CommType::F16 || *type == CommType::BF16))
    return CommType::F32;
  return type;
}

void KernelRegistry::add(llvm::StringRef device, llvm::StringRef op,
                         std::initializer_list<CommType> types,
                         StreamKind stream, KernelFactory factory) {
  for (CommType t : types)
    entries[{device.str(), op.str(), t}] = {stream, factory};
}

absl::StatusOr<KernelRegistry::Bound>
KernelRegistry::bind(Operation *op, BindContext &context) const {
  Type keyType = op->getNumResults()    ? op->getResult(0).getType()
                 : op->getNumOperands() ? op->getOperand(0).getType()
                                        : Type();
  std::string name = op->getName().getStringRef().str();
  if (!keyType || !isa<RankedTensorType>(keyType))
    return absl::UnimplementedError(
        absl::StrCat("'", name, "' has no kernel on any backend"));
  absl::StatusOr<CommType> type = commTypeOf(keyType);
  if (!type.ok())
    return type.status();
  std::string device(context.tensors.device().kind());
  auto it = entries.find({device, name, *type});
  if (it == entries.end()) {
    bool any = false;
    for (auto &[key, entry] : entries)
      any |= std::get<0>(key) == device && std::get<1>(key) == name;
    return absl::UnimplementedError(
        any ? absl::StrCat("the ", device, " backend has no kernel for '", name,
                           "' on ", nameOf(*type), " tensors")
            : absl::StrCat("the ", device, " backend has no kernel for '", name,
                           "'"));
  }
  context.exchange = {};
  absl::StatusOr<Kernel> kernel = it->second.factory(op, context);
  if (!kernel.ok())
    return kernel.status();
  return Bound{*std::move(kernel), it->second.stream,
               std::move(context.exchange)};
}

} // namespace pc::runtime
