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

void KernelRegistry::add(llvm::StringRef op,
                         std::initializer_list<CommType> types,
                         StreamKind stream, KernelFactory factory) {
  for (CommType t : types)
    entries[{op.str(), t}] = {stream, factory};
}

namespace {
bool isHalf(CommType t) { return t == CommType::F16 || t == CommType::BF16; }
} // namespace

void KernelRegistry::addWidening(llvm::StringRef op, StreamKind stream,
                                 KernelFactory factory) {
  add(op, {CommType::F32}, stream, factory);
  KernelFactory widened = [factory](Operation *o,
                                    BindContext &c) -> absl::StatusOr<Kernel> {
    // The inner kernel is bound as if the op's float types were f32.
    c.widen = true;
    absl::StatusOr<Kernel> inner = factory(o, c);
    c.widen = false;
    if (!inner.ok())
      return inner.status();
    std::vector<CommType> resultTypes;
    for (Type t : o->getResultTypes()) {
      absl::StatusOr<CommType> type = commTypeOf(t);
      if (!type.ok())
        return type.status();
      resultTypes.push_back(*type);
    }
    return Kernel([inner = *std::move(inner), resultTypes](KernelIO &io) {
      std::vector<HostTensor> wide(io.inputs.size());
      std::vector<const HostTensor *> in(io.inputs.begin(), io.inputs.end());
      for (size_t i = 0; i < in.size(); ++i)
        if (isHalf(in[i]->type)) {
          wide[i] = in[i]->convert(CommType::F32);
          in[i] = &wide[i];
        }
      KernelIO inner32{in, {}, io.outputs};
      if (absl::Status s = inner(inner32); !s.ok())
        return s;
      for (size_t r = 0; r < resultTypes.size(); ++r)
        if (isHalf(resultTypes[r]) && io.outputs[r]->type != resultTypes[r])
          io.outputs[r] = std::make_shared<const HostTensor>(
              io.outputs[r]->convert(resultTypes[r]));
      return absl::OkStatus();
    });
  };
  add(op, {CommType::F16, CommType::BF16}, stream, widened);
}

absl::StatusOr<KernelRegistry::Bound>
KernelRegistry::bind(Operation *op, BindContext &context) const {
  Type keyType = op->getNumResults()    ? op->getResult(0).getType()
                 : op->getNumOperands() ? op->getOperand(0).getType()
                                        : Type();
  std::string name = op->getName().getStringRef().str();
  if (!keyType || !isa<RankedTensorType>(keyType))
    return absl::UnimplementedError(
        absl::StrCat("'", name, "' has no kernel on this backend"));
  absl::StatusOr<CommType> type = commTypeOf(keyType);
  if (!type.ok())
    return type.status();
  auto it = entries.find({name, *type});
  if (it == entries.end()) {
    bool any = false;
    for (auto &[key, entry] : entries)
      any |= key.first == name;
    return absl::UnimplementedError(
        any ? absl::StrCat("this backend has no kernel for '", name, "' on ",
                           nameOf(*type), " tensors")
            : absl::StrCat("this backend has no kernel for '", name, "'"));
  }
  absl::StatusOr<Kernel> kernel = it->second.factory(op, context);
  if (!kernel.ok())
    return kernel.status();
  return Bound{*std::move(kernel), it->second.stream};
}

KernelRegistry cpuKernels() {
  KernelRegistry registry;
  registerComputeKernels(registry);
  registerCommKernels(registry);
  return registry;
}

} // namespace pc::runtime
