//===- CollectiveOps.td - Collectives that boxing lowers to -*- tablegen -*-===//
//
// Each op is one step of a boxing plan: it changes the SBP entries of the
// mesh axes `axes` (a contiguous ascending run, which forms the groups) and
// keeps the others. `mesh` names the mesh.
//
// The ops have two forms. Before partitioning, their types are logical and
// carry SBP encodings, and the verifier checks that the change is the op's
// transition and keeps the meaning of the other axes. After partitioning,
// their types are one device's local types. Every member's extent along the
// split dim then follows from the group's whole extent (the larger of the
// local shapes along it) by the uneven rule over the group's axes
// (pc::groupExtents); `sizes` may list them, and must then agree.
//
//===----------------------------------------------------------------------===//

#ifndef PC_COLLECTIVE_OPS_TD
#define PC_COLLECTIVE_OPS_TD

def PC_ReductionEnum : I32EnumAttr<"Reduction", "how partial values are reduced", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>,
    I32EnumAttrCase<"avg", 3>]> {
  let cppNamespace = "::pc";
  let genSpecializedAttr = 0;
}

def PC_Reduction : EnumAttr<Pc_Dialect, PC_ReductionEnum, "reduction"> {
  let summary = "How partial values are reduced: sum, max, min or avg";
  let assemblyFormat = "`<` $value `>`";
}

class PC_StepOp<string mnemonic> : PC_TensorOp<mnemonic, [Pure]> {
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True in the per-device form (after pc-partition).
    bool isLocal() {
      return !::pc::getSbp(getInput().getType());
    }
  }];
}

def PC_AllReduceOp : PC_StepOp<"all_reduce"> {
  let summary = "Reduces partial values over groups of a mesh: P -> B";
  let description = [{
    Every member of a group over `axes` gets the reduction (`reduce`) of
    all members' values.

    ```mlir
    %y = pc.all_reduce %x {mesh = @m, axes = array<i64: 1>, reduce = #pc.reduction<sum>}
        : (tensor<8x4xf32, #pc.sbp<@m, [S(0), P]>>)
        -> tensor<8x4xf32, #pc.sbp<@m, [S(0), B]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, PC_Reduction:$reduce);
}

def PC_AllGatherOp : PC_StepOp<"all_gather"> {
  let summary = "Concatenates the members' pieces along a dim: S(dim) -> B";
  let description = [{
    ```mlir
    %y = pc.all_gather %x {mesh = @m, axes = array<i64: 0, 1>, dim = 0 : i64}
        : (tensor<8x4xf32, #pc.sbp<@m, [S(0), S(0)]>>)
        -> tensor<8x4xf32, #pc.sbp<@m, [B, B]>>
    // after pc-partition, 10 rows over 4 members (3, 3, 2, 2):
    %y = pc.all_gather %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64}
        : (tensor<3x4xf32>) -> tensor<10x4xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$dim,
                       OptionalAttr<DenseI64ArrayAttr>:$sizes);
}

def PC_ReduceScatterOp : PC_StepOp<"reduce_scatter"> {
  let summary = "Reduces partial values and keeps one piece: P -> S(dim)";
  let description = [{
    Member `i` of a group over `axes` gets piece `i` along `dim` of the
    reduction of all members' values.

    ```mlir
    %y = pc.reduce_scatter %x {mesh = @m, axes = array<i64: 0>, dim = 0 : i64,
                               reduce = #pc.reduction<sum>}
        : (tensor<8x4xf32, #pc.sbp<@m, [P]>>) -> tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$dim,
                       PC_Reduction:$reduce,
                       OptionalAttr<DenseI64ArrayAttr>:$sizes);
}

def PC_AllToAllOp : PC_StepOp<"all_to_all"> {
  let summary = "Re-splits along another dim: S(src_dim) -> S(dst_dim)";
  let description = [{
    Member `i` ends with piece `i` along `dst_dim` of the group's union,
    whole along `src_dim`. After partitioning, `src_sizes` and `dst_sizes`
    may give the members' extents along the two dims.

    ```mlir
    %y = pc.all_to_all %x {mesh = @m, axes = array<i64: 0>, src_dim = 0 : i64,
                           dst_dim = 1 : i64}
        : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x4xf32, #pc.sbp<@m, [S(1)]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$src_dim,
                       I64Attr:$dst_dim,
                       OptionalAttr<DenseI64ArrayAttr>:$src_sizes,
                       OptionalAttr<DenseI64ArrayAttr>:$dst_sizes);
}

def PC_LocalSliceOp : PC_StepOp<"local_slice"> {
  let summary = "Keeps this member's piece of a broadcast value: B -> S(dim)";
  let description = [{
    No communication: member `i` of a group over `axes` keeps piece `i`
    along `dim`.

    ```mlir
    %y = pc.local_slice %x {mesh = @m, axes = array<i64: 1>, dim = 1 : i64}
        : (tensor<8x4xf32, #pc.sbp<@m, [S(0), B]>>)
        -> tensor<8x4xf32, #pc.sbp<@m, [S(0), S(1)]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$dim,
                       OptionalAttr<DenseI64ArrayAttr>:$sizes);
}

def PC_LocalPartialOp : PC_StepOp<"local_partial"> {
  let summary = "Turns a broadcast or split value into partials: B|S -> P";
  let description = [{
    No communication. From B: for `sum`, member 0 of each group keeps the
    value and the others hold zeros; for `max`, `min` and `avg` every member
    keeps it. From `S(dim)` (sum only): every member places its piece in a
    zero tensor of the group's whole shape; `sizes` then gives the members'
    extents along `dim`.

    ```mlir
    %y = pc.local_partial %x {mesh = @m, axes = array<i64: 0>, reduce = #pc.reduction<sum>}
        : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [P]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, PC_Reduction:$reduce,
                       OptionalAttr<I64Attr>:$dim,
                       OptionalAttr<DenseI64ArrayAttr>:$sizes);
}

def PC_BroadcastOp : PC_TensorOp<"broadcast", [Pure]> {
  let summary = "Copies one member's value to every member of its groups";
  let description = [{
    Every member of a group over `axes` gets the value of the member with
    group index `root`. The layout does not change (the value is broadcast
    on `axes` before and after): this makes the members agree, for example
    after a parameter was initialized or loaded on one of them.

    ```mlir
    %y = pc.broadcast %x {mesh = @m, axes = array<i64: 0>, root = 0 : i64}
        : (tensor<8xf32, #pc.sbp<@m, [B]>>) -> tensor<8xf32, #pc.sbp<@m, [B]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$root);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PC_PieceOffsetOp : PC_Op<"piece_offset", [Pure]> {
  let summary = "Where this device's piece starts along a split dim";
  let description = [{
    In a per-device program: the offset, along the split dim, of this
    device's piece, for a dim split over the mesh axes `axes` (in that
    order) into pieces of extents `sizes` (one per member of the flattened
    group). Vocab-parallel embedding uses it to shift ids into its rows.

    ```mlir
    %off = pc.piece_offset {mesh = @m, axes = array<i64: 1>, sizes = array<i64: 500, 500>}
        : tensor<i64>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs 0DTensorOf<[I64]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def PC_PickLabelsOp : PC_TensorOp<"pick_labels", [Pure]> {
  let summary = "Picks one class entry per example, zero outside the piece";
  let description = [{
    In a per-device program: `result[i...] = values[i..., labels[i...]]`
    when `0 <= labels[i...] < classes`, and 0 otherwise. The per-device form
    of a cross-entropy over logits split along the class dim uses it, with
    labels shifted into the device's classes, so that the partial picks sum
    to the logit of the label.

    ```mlir
    %p = pc.pick_labels %z, %l : (tensor<8x500xf32>, tensor<8xi64>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$values, PC_IndexTensor:$labels);
  let results = (outs PC_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PC_TransferOp : PC_TensorOp<"transfer", [Pure]> {
  let summary = "Point-to-point copy between two meshes";
  let description = [{
    Moves a value from the layout of its operand on one mesh to the layout
    of its result on another. Neither layout has partial entries: boxing
    reduces them on the source first and creates them on the destination
    after. Every destination position receives exactly the boxes of the
    logical tensor it needs, each from one source position that holds it
    (one on the same device when there is one, which is a local copy).

    ```mlir
    %y = pc.transfer %x : (tensor<8x4xf32, #pc.sbp<@stage0, [S(0)]>>)
        -> tensor<8x4xf32, #pc.sbp<@stage1, [B]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PC_SendOp : PC_Op<"send"> {
  let summary = "This device's part of a transfer between meshes: sending";
  let description = [{
    In a per-device program: sends this device's piece of a value in the
    layout `from` to the devices that need it in the layout `to` (another
    mesh). Which boxes go to which device follows from the two layouts
    alone, by the rule of `pc.transfer`, so every device computes the same
    pairing and only the needed bytes move.

    ```mlir
    pc.send %x {from = tensor<8x8xf32, #pc.sbp<@stage0, [S(0)]>>,
                to = tensor<8x8xf32, #pc.sbp<@stage1, [B]>>} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, TypeAttr:$from, TypeAttr:$to);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def PC_RecvOp : PC_Op<"recv"> {
  let summary = "This device's part of a transfer between meshes: receiving";
  let description = [{
    In a per-device program: receives this device's piece of a value in the
    layout `to` from the devices that hold it in the layout `from`. See
    `pc.send`.

    ```mlir
    %y = pc.recv {from = tensor<8x8xf32, #pc.sbp<@stage0, [S(0)]>>,
                  to = tensor<8x8xf32, #pc.sbp<@stage1, [B]>>} : tensor<8x8xf32>
    ```
  }];
  let arguments = (ins TypeAttr:$from, TypeAttr:$to);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def PC_RedistributeOp : PC_Op<"redistribute", [Pure]> {
  let summary = "This device's part of a transfer within one mesh";
  let description = [{
    In a per-device program: the lowering of a `pc.transfer` whose two
    layouts are on the same mesh, a collective over all of its devices (an
    all-to-all-v of boxes). This device's piece of a value in the layout
    `from` becomes its piece in the layout `to`. Every device receives
    exactly the elements of its new piece that its old piece lacks, each
    from one device that holds them; the pairing follows from the two
    layouts alone, so every device derives the same one. Neither layout has
    partial entries.

    It is what the boxing planner emits when chains of 1-D collectives
    would move more bytes than the devices lack, as for an axis swap:

    ```mlir
    %y = pc.redistribute %x {from = tensor<8x8xf32, #pc.sbp<@m, [S(0), S(1)]>>,
                             to = tensor<8x8xf32, #pc.sbp<@m, [S(1), S(0)]>>}
        : (tensor<4x4xf32>) -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, TypeAttr:$from, TypeAttr:$to);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type($input, $result)";
  let hasVerifier = 1;
}

#endif // PC_COLLECTIVE_OPS_TD
