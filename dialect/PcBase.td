//===- PcBase.td - The pc dialect --------------------------*- tablegen -*-===//

#ifndef PC_BASE_TD
#define PC_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Pc_Dialect : Dialect {
  let name = "pc";
  let cppNamespace = "::pc";
  let summary = "Logical graphs with SBP layouts for distributed training";
  let description = [{
    The `pc` dialect describes a model as a *logical graph*: the whole
    computation as if it ran on one huge device. Device meshes are symbols
    (`pc.mesh`). The layout of a tensor on a mesh is an SBP attribute
    (`#pc.sbp`) carried as the encoding of its ranked tensor type; a tensor
    without an encoding has no layout decided yet.

    ```mlir
    pc.mesh @m <["dp"=2, "tp"=2]>
    pc.param @w : tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>
        = #pc.init<normal(std = 0.02)>
    func.func @f(%x: tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>)
        -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>> {
      %w = pc.get_param @w : tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>
      %y = pc.matmul %x, %w : (tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>,
          tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>)
          -> tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
      return %y : tensor<8x64xf32, #pc.sbp<@m, [S(0), S(1)]>>
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  // The discardable attributes: their names live here only; code reads and
  // writes them through dialect/ProgramAttrs.h.
  let discardableAttrs = (ins
    // On a per-device program (func.func): the logical graph it is a part
    // of, and the global ranks that run it.
    "::mlir::StringAttr":$graph,
    "::mlir::DenseI64ArrayAttr":$ranks,
    // On an op after SBP propagation: the layout it consumes each operand in.
    "::mlir::ArrayAttr":$operand_sbps,
    // On a program's arguments and results: the logical graph's position
    // and type of the value, its user-facing name, and what a result is for
    // in training (the loss; the gradient of a parameter).
    "::mlir::IntegerAttr":$index,
    "::mlir::TypeAttr":$logical_type,
    "::mlir::StringAttr":$name,
    "::mlir::UnitAttr":$loss,
    "::mlir::FlatSymbolRefAttr":$grad,
    // Pipelines. On a logical op: its model stage; on a backward op (set by
    // pc-autodiff): that it is one, and whether it computes an activation's
    // gradient; on a logical graph: the mesh of each device stage and how it
    // is pipelined; on any op of a pipelined graph: its action; on a
    // per-device program: its actions in order.
    "::mlir::IntegerAttr":$stage,
    "::mlir::UnitAttr":$backward,
    "::mlir::UnitAttr":$input_grad,
    "::mlir::ArrayAttr":$stage_meshes,
    "::mlir::Attribute":$pipeline,
    "::mlir::Attribute":$action,
    "::mlir::ArrayAttr":$schedule,
    // On a graph that pc-micro-batch shrank to one micro-batch: per result,
    // its batch dim, or how micro-batches combine it (-1 mean, -2 sum).
    "::mlir::DenseI64ArrayAttr":$micro_batch,
    // On a pc.param that pc-optimizer added for its state (moments, the
    // step counter): a checkpoint holds it, model weights do not.
    "::mlir::UnitAttr":$optimizer_state,
    // On a per-device program (pc-memory-plan): its predicted peak device
    // memory and what is live at that peak, in bytes.
    "::mlir::DictionaryAttr":$memory,
    // Recompute. On a forward op: the segment the user puts it in (ops
    // without one share their predecessor's); on an op pc-recompute built:
    // that it recomputes a forward value for the backward pass.
    "::mlir::IntegerAttr":$segment,
    "::mlir::UnitAttr":$recompute,
    // Mixed precision. On a logical graph (pc-mixed-precision): how its
    // loss is scaled, which pc-autodiff and pc-optimizer read.
    "::mlir::DictionaryAttr":$loss_scaling,
    // CPU offload (pc-offload). On a pc.param: it is stored in host memory;
    // on an op: it runs on the host, and its results are in host memory.
    "::mlir::UnitAttr":$host,
    // On the module (pc-cost-model): the devices' rates every cost in the
    // compiler and the runtime's transfer plans are figured with.
    "::mlir::DictionaryAttr":$cost_model
  );
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerOps();
  }];
}

#endif // PC_BASE_TD
