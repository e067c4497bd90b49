//===- PassUtils.cpp - Helpers shared by the pc passes --------------------===//

#include "passes/PassUtils.h"

#include "dialect/ProgramAttrs.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace pc {

RankedTensorType withSbp(Type type, SbpAttr sbp) {
  auto tensor = cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), tensor.getElementType(), sbp);
}

std::string ranksText(func::FuncOp f) {
  std::string out = "ranks [";
  llvm::raw_string_ostream os(out);
  llvm::interleaveComma(attrs::getRanks(f), os);
  os << "]";
  return out;
}

SbpAttr makeSbp(MLIRContext *context, FlatSymbolRefAttr mesh,
                ArrayRef<SbpEntry> entries) {
  return SbpAttr::get(context, mesh, entries);
}

} // namespace pc

llvm::DenseSet<Operation *> pc::optimizerOps(func::FuncOp f) {
  DenseSet<Operation *> update;
  Block &body = f.getBody().front();
  DenseSet<Value> fromUpdate;
  for (BlockArgument arg : f.getArguments())
    if (StringAttr name = attrs::getArgName(f, arg.getArgNumber());
        name && name.getValue() == "lr")
      fromUpdate.insert(arg);
  std::optional<attrs::LossScaling> scaling = attrs::getLossScaling(f);
  for (Operation &op : body.without_terminator()) {
    bool reads = false;
    if (auto get = dyn_cast<GetParamOp>(op)) {
      auto param =
          SymbolTable::lookupNearestSymbolFrom<ParamOp>(&op, get.getNameAttr());
      reads = param && attrs::isOptimizerState(param) &&
              !(scaling && get.getName() == scaling->scale.getValue());
    }
    for (Value v : op.getOperands())
      reads |= fromUpdate.contains(v);
    if (reads) {
      update.insert(&op);
      for (Value r : op.getResults())
        fromUpdate.insert(r);
    }
  }
  return update;
}

void pc::copyPlacement(Operation *user, Operation *op) {
  if (std::optional<int64_t> stage = attrs::getStage(user))
    attrs::setStage(op, *stage);
  if (ActionAttr a = attrs::getAction(user))
    attrs::setAction(op, a);
  if (attrs::isBackward(user))
    attrs::setBackward(op);
}

Type pc::computeElementType(Operation *op) {
  if (op->getNumOperands() == 0)
    return {};
  auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  return t ? t.getElementType() : Type();
}

bool pc::isFloatTensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && isa<FloatType>(r.getElementType());
}

std::optional<unsigned> pc::lossResult(func::FuncOp f) {
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (attrs::isLoss(f, i))
      return i;
  if (f.getNumResults() != 1)
    return std::nullopt;
  auto t = dyn_cast<RankedTensorType>(f.getResultTypes()[0]);
  if (t && t.getRank() == 0 && isFloatTensor(t))
    return 0u;
  return std::nullopt;
}

int64_t pc::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return 0;
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

bool pc::isCommOp(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             LocalSliceOp, LocalPartialOp, BroadcastOp, SendOp, RecvOp,
             RedistributeOp>(op);
}
