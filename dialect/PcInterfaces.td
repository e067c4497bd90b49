//===- PcInterfaces.td - pc op interfaces ------------------*- tablegen -*-===//

#ifndef PC_INTERFACES_TD
#define PC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def PC_SbpOpInterface : OpInterface<"SbpOpInterface"> {
  let cppNamespace = "::pc";
  let description = [{
    A logical op that can run distributed. It lists the 1-D SBP signatures
    valid for given operand and result shapes on a mesh axis of a given
    size, and gives the figures of the cost model: the compute work of the
    whole logical op and the bytes of its results.

    SBP propagation builds nd signatures from these (see SbpSignature.h) and
    chooses among them by boxing cost, then by work per device.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends the 1-D signatures valid on a mesh axis of `axisSize`
        devices when the operands and results have the (local) shapes given.
        The all-B signature is always among them.
      }], "void", "getSbpSignatures", (ins
        "::llvm::ArrayRef<::llvm::SmallVector<int64_t, 4>>":$operandShapes,
        "::llvm::ArrayRef<::llvm::SmallVector<int64_t, 4>>":$resultShapes,
        "int64_t":$axisSize,
        "::llvm::SmallVectorImpl<::pc::SbpSignature> &":$signatures)>,
    InterfaceMethod<[{
        The arithmetic work of the whole logical op, in floating-point
        operations (multiply-adds count two).
      }], "double", "getComputeCost", (ins)>,
    InterfaceMethod<[{
        The bytes of the op's logical results.
      }], "int64_t", "getMemoryBytes", (ins), [{}], [{
        int64_t bytes = 0;
        for (::mlir::Type t : $_op->getResultTypes()) {
          auto tensor = ::llvm::cast<::mlir::RankedTensorType>(t);
          bytes += tensor.getNumElements() *
                   ((tensor.getElementTypeBitWidth() + 7) / 8);
        }
        return bytes;
      }]>,
  ];
}

#endif // PC_INTERFACES_TD
