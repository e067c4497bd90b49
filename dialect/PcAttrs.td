//===- PcAttrs.td - pc attributes --------------------------*- tablegen -*-===//

#ifndef PC_ATTRS_TD
#define PC_ATTRS_TD

include "dialect/PcBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/TensorEncoding.td"

class PC_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Pc_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def PC_DeviceKind : I32EnumAttr<"DeviceKind", "the kind of device a mesh runs on", [
    I32EnumAttrCase<"cpu", 0>,
    I32EnumAttrCase<"cuda", 1>]> {
  let cppNamespace = "::pc";
}

def PC_InitKind : I32EnumAttr<"InitKind", "a parameter initializer", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"normal", 3>,
    I32EnumAttrCase<"truncated_normal", 4>,
    I32EnumAttrCase<"uniform", 5>]> {
  let cppNamespace = "::pc";
}

def PC_SbpAttr : PC_Attr<"Sbp", "sbp",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "The SBP layout of a tensor on a device mesh";
  let description = [{
    One entry per axis of the mesh `@mesh`, in the mesh's axis order:

    - `S(d)`: the tensor is split along its dim `d` over that axis;
    - `B`: every device of that axis holds the whole (current) piece;
    - `P`, or `P(sum)`, `P(max)`, `P(min)`, `P(avg)`: every device holds a
      partial value of the whole piece; the logical value is their reduction.

    Entries apply hierarchically in mesh-axis order, so `[S(0), S(0)]` on a
    2x2 mesh splits dim 0 in halves over axis 0 and each half again over
    axis 1. Uneven splits give the first `n mod p` parts one extra element.

    The attribute is the encoding of a ranked tensor type:

    ```mlir
    tensor<64x1024xf32, #pc.sbp<@m, [S(0), B]>>
    tensor<64x1024xf32, #pc.sbp<@m, [P(max), S(1)]>>
    ```

    On its own the attribute checks that split dims are in range for the
    tensor; the number of entries and the mesh are checked by the ops that
    use the tensor, which can see the mesh symbol.
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::pc::SbpEntry", "one entry per mesh axis">:$entries);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True when some entry is P.
    bool hasPartial() const;
    /// True when some entry is S.
    bool hasSplit() const;
    /// "[S(0), B]".
    std::string formatEntries() const;
  }];
}

def PC_InitAttr : PC_Attr<"Init", "init"> {
  let summary = "How a parameter is initialized";
  let description = [{
    The initializer of a `pc.param`. Random initializers draw from the run's
    seed and the parameter's name, so a parameter gets the same logical value
    on any mesh.

    ```mlir
    #pc.init<zeros>
    #pc.init<ones>
    #pc.init<constant(value = 0.5)>
    #pc.init<normal(mean = 0.0, std = 0.02)>            // mean defaults to 0
    #pc.init<truncated_normal(mean = 0.0, std = 0.02)>  // cut at 2 std
    #pc.init<uniform(low = -0.1, high = 0.1)>
    ```
  }];
  let parameters = (ins
    "::pc::InitKind":$kind,
    APFloatParameter<"the first parameter: value, mean or low">:$a,
    APFloatParameter<"the second parameter: std or high">:$b);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    double getFirst() const { return getA().convertToDouble(); }
    double getSecond() const { return getB().convertToDouble(); }
  }];
}

def PC_PipelineActionKind : I32EnumAttr<"PipelineActionKind",
    "what a pipeline action computes", [
    I32EnumAttrCase<"F", 0>,
    I32EnumAttrCase<"B", 1>,
    I32EnumAttrCase<"W", 2>]> {
  let cppNamespace = "::pc";
}

def PC_ActionAttr : PC_Attr<"Action", "action"> {
  let summary = "One action of a pipeline schedule";
  let description = [{
    `F` (forward), `B` (backward; input gradients only when the schedule
    splits the backward pass) or `W` (weight gradients) of one model stage
    for one micro-batch. An op of a pipelined graph carries the action it
    belongs to as `pc.action`; a per-device program lists its actions in
    the order it runs them as `pc.schedule`.

    ```mlir
    #pc.action<F, 1, 3>      // forward of model stage 1, micro-batch 3
    ```
  }];
  let parameters = (ins "::pc::PipelineActionKind":$kind, "int64_t":$stage,
                        "int64_t":$micro_batch);
  let assemblyFormat = "`<` $kind `,` $stage `,` $micro_batch `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The action, for pipeline/Schedule.h.
    ::pc::pipeline::Action asAction() const;
  }];
}

def PC_PipelineAttr : PC_Attr<"Pipeline", "pipeline"> {
  let summary = "How a graph is pipelined";
  let description = [{
    The schedule (`gpipe`, `1f1b`, `interleaved` or `zb-h1`), the device
    stages `p`, the micro-batches `m` a step is split into, and the model
    stages per device stage `v` (interleaved only). Model stage `c` runs on
    device stage `c mod p`. `backward = false` marks a forward-only graph
    (evaluation, inference; `pc-micro-batch` sets it when a pipelined graph
    has no backward pass): its schedule runs forwards only.

    ```mlir
    #pc.pipeline<schedule = "1f1b", stages = 4, micro_batches = 8, virtual_stages = 1>
    #pc.pipeline<schedule = "1f1b", stages = 2, micro_batches = 4, virtual_stages = 1, backward = false>
    ```
  }];
  let parameters = (ins StringRefParameter<"the schedule">:$schedule,
                        "int64_t":$stages, "int64_t":$micro_batches,
                        "int64_t":$virtual_stages,
                        DefaultValuedParameter<"bool", "true">:$backward);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The schedule's parameters, for pipeline/Schedule.h.
    ::pc::pipeline::ScheduleSpec getSpec() const;
  }];
}

#endif // PC_ATTRS_TD
