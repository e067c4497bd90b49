//===- PcOps.td - pc operations ----------------------------*- tablegen -*-===//
//
// Ops that take tensors print as
//   %r = pc.op %a, %b {attrs} : (type(a), type(b)) -> type(r)
// and every one verifies its shapes and attributes. Result types are written
// out because they carry the SBP encoding, which shape rules cannot infer (the
// C++ builders of most ops infer the rest);
// the shape and element type are checked against the inferred ones
// (dialect/ShapeInference.h holds the rules, shared with the C++ API).
//
//===----------------------------------------------------------------------===//

#ifndef PC_OPS_TD
#define PC_OPS_TD

include "dialect/PcAttrs.td"
include "dialect/PcInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints and traits
//===----------------------------------------------------------------------===//

def PC_AnyElem : AnyTypeOf<[F32, F16, BF16, I32, I64, UI8]>;
def PC_FloatElem : AnyTypeOf<[F32, F16, BF16]>;
def PC_IndexElem : AnyTypeOf<[I32, I64]>;

def PC_Tensor : RankedTensorOf<[PC_AnyElem]>;
def PC_FloatTensor : RankedTensorOf<[PC_FloatElem]>;
def PC_IndexTensor : RankedTensorOf<[PC_IndexElem]>;

// Static shapes, and an encoding that is #pc.sbp or nothing, on every tensor
// operand and result.
def PC_TensorTypes : NativeOpTrait<"PcTensorTypes"> {
  let cppNamespace = "::pc::OpTrait";
}
// All encoded operands and results are on one mesh: a logical op never moves
// data between meshes; pc.to_sbp and pc.boxing do.
def PC_SameMesh : NativeOpTrait<"PcSameMesh"> {
  let cppNamespace = "::pc::OpTrait";
}

class PC_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pc_Dialect, mnemonic, traits>;

// An op on SBP-encoded tensors. Its mesh references live in its types, so it
// checks them as a symbol user.
class PC_TensorOp<string mnemonic, list<Trait> traits = []>
    : PC_Op<mnemonic, !listconcat(traits, [PC_TensorTypes,
          DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      return ::pc::verifySbpSymbolUses(getOperation(), symbolTable);
    }
  }];
}

// A logical compute op.
class PC_ComputeOp<string mnemonic, list<Trait> traits = []>
    : PC_TensorOp<mnemonic, !listconcat(traits, [PC_SameMesh, Pure,
          DeclareOpInterfaceMethods<PC_SbpOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Meshes and parameters
//===----------------------------------------------------------------------===//

def PC_MeshOp : PC_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A device mesh (placement) with named axes";
  let description = [{
    Declares the mesh `@name` with named axes and their sizes. Its devices
    are of kind `cpu` (the default) or `cuda`. They are the ranks `0 ..
    N-1` laid out row-major (the last axis varies fastest), unless an
    explicit `ranks` list gives the global rank of each mesh position in
    row-major order. A module may hold several meshes, for example one per
    pipeline stage; they may share ranks.

    ```mlir
    pc.mesh @m <["dp"=2, "tp"=4]>
    pc.mesh @stage1 <["dp"=2, "tp"=2]> on cuda ranks [4, 5, 6, 7]
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$axis_names,
    DenseI64ArrayAttr:$shape,
    DefaultValuedAttr<PC_DeviceKind, "::pc::DeviceKind::cpu">:$device,
    OptionalAttr<DenseI64ArrayAttr>:$ranks);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of devices.
    int64_t getNumDevices();
    /// The global rank at row-major mesh position `index`.
    int64_t getRank(int64_t index);
    /// The position of the axis named `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name);
  }];
}

def PC_ParamOp : PC_Op<"param", [Symbol, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A named, persistent parameter";
  let description = [{
    Declares the persistent tensor `@name`, which keeps its value across
    training steps and is saved in checkpoints under its name. Its type is
    its logical shape and element type, and optionally the SBP layout it is
    stored in. `init` says how it is first filled; `trainable = false`
    freezes it, so that it gets no gradient.

    ```mlir
    pc.param @wte : tensor<50304x768xf32, #pc.sbp<@m, [B, S(0)]>>
        = #pc.init<normal(std = 0.02)>
    pc.param @ln_f.bias : tensor<768xf32> = #pc.init<zeros> {trainable = false}
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<PC_Tensor>:$type,
    PC_InitAttr:$init,
    DefaultValuedAttr<BoolAttr, "true">:$trainable);
  let assemblyFormat = "$sym_name `:` $type `=` qualified($init) attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def PC_GetParamOp : PC_Op<"get_param", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads a parameter's current value";
  let description = [{
    The current value of the parameter `@name`. The result type must be the
    parameter's type, encoding included.

    ```mlir
    %w = pc.get_param @w : tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def PC_SetParamOp : PC_Op<"set_param", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Gives a parameter its value for the next step";
  let description = [{
    Stores `value` as the parameter `@name` once the step succeeds: every
    `pc.get_param` of the same step reads the old value, the next step reads
    this one. A step that fails stores nothing. The value has the
    parameter's logical shape and element type; once layouts are decided it
    is in the parameter's layout (propagation asks for it, boxing converts).
    Optimizers end with it, for weights and for their state.

    ```mlir
    pc.set_param @w, %w_next : tensor<64x64xf32, #pc.sbp<@m, [B, S(1)]>>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, PC_Tensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Layout changes
//===----------------------------------------------------------------------===//

def PC_ToSbpOp : PC_TensorOp<"to_sbp", [Pure]> {
  let summary = "Constrains a value to an SBP layout";
  let description = [{
    The user's layout constraint, in the manner of `to_global` or
    `with_sharding_constraint`: the result is the operand's logical value in
    the layout of the result type, which may be on another mesh. The
    operand's layout may be undecided. Propagation treats the result layout
    as fixed; boxing makes the change explicit.

    ```mlir
    %y = pc.to_sbp %x : (tensor<8x64xf32>) -> tensor<8x64xf32, #pc.sbp<@m, [S(0), B]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PC_BoxingOp : PC_TensorOp<"boxing", [Pure]> {
  let summary = "A layout change that a pass has decided on";
  let description = [{
    Changes the layout of a value from the operand's SBP to the result's,
    keeping its logical value. Both layouts are decided. Passes insert this
    op; the boxing planner lowers it to collectives, or to point-to-point
    transfers between different meshes.

    ```mlir
    %y = pc.boxing %x : (tensor<8x64xf32, #pc.sbp<@m, [P, B]>>)
        -> tensor<8x64xf32, #pc.sbp<@m, [B, B]>>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Logical compute ops
//===----------------------------------------------------------------------===//

def PC_MatmulOp : PC_ComputeOp<"matmul"> {
  let summary = "Batched matrix product";
  let description = [{
    `result = alpha · op(lhs) · op(rhs)`, where `op` transposes the last two
    dims when `transpose_lhs` / `transpose_rhs` is set. Both operands have
    rank at least 2; their leading (batch) dims broadcast as in NumPy.
    `alpha` (default 1, finite) scales the product as it is written out:
    `--pc-fuse` folds an attention's `1/sqrt(d)` into it.

    An optional third operand, the `addend`, is added to the scaled product
    as it is written out: `result = alpha · op(lhs) · op(rhs) + addend`. It
    broadcasts to the result shape as in NumPy (a bias `[n]`, or a whole
    residual) and never widens it. `--pc-fuse` folds residual adds and the
    sums of gradients into it, saving a pass over the result.

    ```mlir
    %y = pc.matmul %x, %w {transpose_rhs} : (tensor<4x8x64xf32>, tensor<32x64xf32>)
        -> tensor<4x8x32xf32>
    %s = pc.matmul %q, %k {alpha = 0.125 : f64, transpose_rhs}
        : (tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x8xf32>
    %h = pc.matmul %x, %w, %residual
        : (tensor<4x8x64xf32>, tensor<64x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$lhs, PC_FloatTensor:$rhs,
                       Optional<PC_FloatTensor>:$addend,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                   CArg<"bool", "false">:$transposeLhs,
                   CArg<"bool", "false">:$transposeRhs,
                   CArg<"double", "1.0">:$alpha,
                   CArg<"::mlir::Value", "{}">:$addend), [{
      auto unit = [&](bool b) {
        return b ? $_builder.getUnitAttr() : ::mlir::UnitAttr();
      };
      build($_builder, $_state,
            ::pc::infer::matmul(lhs, rhs, transposeLhs, transposeRhs), lhs, rhs,
            addend, unit(transposeLhs), unit(transposeRhs),
            $_builder.getF64FloatAttr(alpha));
    }]>];
  let extraClassDeclaration = [{
    /// `alpha` as a double.
    double getScale() { return getAlpha().convertToDouble(); }
    void setScale(double alpha) { setAlpha(::llvm::APFloat(alpha)); }
  }];
}

class PC_BinaryOp<string mnemonic, string what, TypeConstraint t = PC_Tensor>
    : PC_ComputeOp<mnemonic> {
  let summary = "Elementwise " # what # " with NumPy broadcasting";
  let description = [{
    The operands have one element type; their shapes broadcast as in NumPy
    to the result shape.

    ```mlir
    %z = pc.}] # mnemonic # [{ %x, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins t:$lhs, t:$rhs);
  let results = (outs t:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
      build($_builder, $_state, ::pc::infer::broadcast(lhs, rhs), lhs, rhs);
    }]>];
}

def PC_AddOp : PC_BinaryOp<"add", "sum">;
def PC_SubOp : PC_BinaryOp<"sub", "difference">;
def PC_MulOp : PC_BinaryOp<"mul", "product">;
def PC_DivOp : PC_BinaryOp<"div", "quotient">;

class PC_UnaryOp<string mnemonic, string what, TypeConstraint t = PC_FloatTensor>
    : PC_ComputeOp<mnemonic> {
  let summary = "Elementwise " # what;
  let description = [{
    The result has the operand's shape and element type.

    ```mlir
    %y = pc.}] # mnemonic # [{ %x : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins t:$input);
  let results = (outs t:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input);
    }]>];
}

def PC_NegOp : PC_UnaryOp<"neg", "negation", PC_Tensor>;
def PC_ExpOp : PC_UnaryOp<"exp", "exponential">;
def PC_LogOp : PC_UnaryOp<"log", "natural logarithm">;
def PC_TanhOp : PC_UnaryOp<"tanh", "hyperbolic tangent">;
def PC_ReluOp : PC_UnaryOp<"relu", "rectifier, max(x, 0)", PC_Tensor>;
def PC_SigmoidOp : PC_UnaryOp<"sigmoid", "logistic function 1 / (1 + exp(-x))">;
def PC_SqrtOp : PC_UnaryOp<"sqrt", "square root">;
def PC_ErfOp : PC_UnaryOp<"erf", "error function">;
def PC_GeluOp : PC_UnaryOp<"gelu", "Gaussian error linear unit"> {
  let description = [{
    `x · Φ(x)` with the exact error function, or, with `approximate`, the
    tanh form `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` used by GPT-2.

    ```mlir
    %y = pc.gelu %x {approximate} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, UnitAttr:$approximate);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "bool":$approximate), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input,
            approximate ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
    }]>];
}

class PC_SoftmaxLikeOp<string mnemonic, string what> : PC_ComputeOp<mnemonic> {
  let summary = what # " over one axis";
  let description = [{
    Normalizes over dim `axis` (negative values count from the back); the
    result has the operand's type.

    ```mlir
    %p = pc.}] # mnemonic # [{ %x {axis = -1 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, I64Attr:$axis);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "int64_t":$axis), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input, axis);
    }]>];
}

def PC_GeluGradOp : PC_ComputeOp<"gelu_grad"> {
  let summary = "The gradient of pc.gelu, fused";
  let description = [{
    `grad · gelu'(input)` in one pass over the elements (the tanh form's
    derivative with `approximate`): what pc-autodiff emits for `pc.gelu`,
    instead of the dozen elementwise ops, each a pass over memory, that
    spell the derivative out. The operands and the result have one type.

    ```mlir
    %dx = pc.gelu_grad %dy, %x {approximate}
        : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$grad, PC_FloatTensor:$input,
                       UnitAttr:$approximate);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad, "::mlir::Value":$input,
                   "bool":$approximate), [{
      build($_builder, $_state, ::pc::infer::sameAs(grad), grad, input,
            approximate ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
    }]>];
}

def PC_SoftmaxGradOp : PC_ComputeOp<"softmax_grad"> {
  let summary = "The gradient of pc.softmax, fused";
  let description = [{
    `output · (grad − Σ_axis grad · output)`, where `output` is the
    softmax's result, in one pass per row: what pc-autodiff emits for
    `pc.softmax` instead of a multiply, a reduction, a subtraction and a
    multiply. The operands and the result have one type.

    With `causal` (the axis must be the last dim), the gradient of a
    causal softmax (see `pc.softmax`): in each `[query, key]` matrix only
    the entries on and below the diagonal are read (the others count as
    0), and the result is 0 above it. For a causal softmax's output, which
    is 0 there, that is the full form, bit for bit.

    ```mlir
    %dx = pc.softmax_grad %dy, %p {axis = -1 : i64}
        : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$grad, PC_FloatTensor:$output,
                       I64Attr:$axis, UnitAttr:$causal);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad, "::mlir::Value":$output,
                   "int64_t":$axis, CArg<"bool", "false">:$causal), [{
      build($_builder, $_state, ::pc::infer::sameAs(grad), grad, output,
            axis, causal);
    }]>];
}

def PC_AdamUpdateOp : PC_ComputeOp<"adam_update"> {
  let summary = "One Adam or AdamW step of a weight and its moments, fused";
  let description = [{
    In one pass over the elements, with `m`, `v` the moments, `g` the
    gradient and the scalars `lr` and the bias corrections `c1`, `c2`:

    ```
    m' = m·β1 + g·(1 − β1)
    v' = v·β2 + g²·(1 − β2)
    w' = w − lr·(m'/c1 / (√(v'/c2) + ε) + weight_decay·w)
    ```

    in f32, in this order, so that it equals the elementwise ops it
    replaces bit for bit. `weight_decay` is AdamW's decoupled decay (0 for
    Adam, whose L2 term is in `g`). pc-optimizer emits it, and stores the
    three results with pc.set_param. The tensors have one shape; the
    scalars are rank 0; all are f32.

    ```mlir
    %w2, %m2, %v2 = pc.adam_update %w, %g, %m, %v, %lr, %c1, %c2
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.01 : f64}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>,
           tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins PC_FloatTensor:$weight, PC_FloatTensor:$grad,
                       PC_FloatTensor:$m, PC_FloatTensor:$v,
                       PC_FloatTensor:$lr, PC_FloatTensor:$bias_correction1,
                       PC_FloatTensor:$bias_correction2, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$epsilon,
                       F64Attr:$weight_decay);
  let results = (outs PC_FloatTensor:$new_weight, PC_FloatTensor:$new_m,
                      PC_FloatTensor:$new_v);
}

def PC_Adam8UpdateOp : PC_ComputeOp<"adam8_update"> {
  let summary = "One Adam or AdamW step with block-wise 8-bit moments";
  let description = [{
    `pc.adam_update` with each moment stored in 8 bits (Dettmers et al.
    2022): `m` and `v` are `ui8` codes of the weight's shape into a fixed
    non-linear map of 256 values (signed for `m`, unsigned for `v`), times
    one f32 scale per block, `m_scale` and `v_scale`. A block is 256
    consecutive elements of a row of the last dim, or the row when it is
    shorter: the scales have the weight's shape with the last dim `n`
    replaced by `ceil(n / 256)`. Each block is decoded, stepped in f32
    exactly as `pc.adam_update`, and encoded again with its new largest
    magnitude as its scale (nearest code).

    ```mlir
    %w2, %m2, %ms2, %v2, %vs2 = pc.adam8_update %w, %g, %m, %ms, %v, %vs, %lr, %c1, %c2
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.0 : f64}
        : (tensor<64x512xf32>, tensor<64x512xf32>, tensor<64x512xui8>,
           tensor<64x2xf32>, tensor<64x512xui8>, tensor<64x2xf32>,
           tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<64x512xf32>, tensor<64x512xui8>, tensor<64x2xf32>,
            tensor<64x512xui8>, tensor<64x2xf32>)
    ```
  }];
  let arguments = (ins PC_FloatTensor:$weight, PC_FloatTensor:$grad,
                       PC_Tensor:$m, PC_FloatTensor:$m_scale, PC_Tensor:$v,
                       PC_FloatTensor:$v_scale, PC_FloatTensor:$lr,
                       PC_FloatTensor:$bias_correction1,
                       PC_FloatTensor:$bias_correction2, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$epsilon,
                       F64Attr:$weight_decay);
  let results = (outs PC_FloatTensor:$new_weight, PC_Tensor:$new_m,
                      PC_FloatTensor:$new_m_scale, PC_Tensor:$new_v,
                      PC_FloatTensor:$new_v_scale);
}

def PC_SoftmaxOp : PC_ComputeOp<"softmax"> {
  let summary = "Softmax over one axis, optionally causal";
  let description = [{
    Normalizes over dim `axis` (negative values count from the back); the
    result has the operand's type.

    With `causal` (the axis must be the last dim), row `q` of each
    `[query, key]` matrix in the last two dims sees only keys `k <= q`: the
    result is the softmax of `pc.causal_mask` of the input (within f32
    rounding), with exact zeros above the diagonal, computed without
    writing the masked scores and without exponentiating them. pc-fuse
    folds a causal mask into the softmax after it.

    ```mlir
    %p = pc.softmax %x {axis = -1 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32>
    %a = pc.softmax %s {axis = -1 : i64, causal}
        : (tensor<4x8x128x128xf32>) -> tensor<4x8x128x128xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, I64Attr:$axis,
                       UnitAttr:$causal);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "int64_t":$axis,
                   CArg<"bool", "false">:$causal), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input, axis,
            causal);
    }]>];
}
def PC_LogSoftmaxOp : PC_SoftmaxLikeOp<"log_softmax", "Log-softmax">;

def PC_LayerNormOp : PC_ComputeOp<"layer_norm"> {
  let summary = "Layer normalization with an affine transform";
  let description = [{
    Normalizes `input` over the trailing dims starting at `axis` (by
    default the last dim) to zero mean and unit variance, then scales by
    `gamma` and shifts by `beta`, whose shape is those trailing dims.

    ```mlir
    %y = pc.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64}
        : (tensor<8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, PC_FloatTensor:$gamma,
                       PC_FloatTensor:$beta,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gamma,
                   "::mlir::Value":$beta, CArg<"int64_t", "-1">:$axis,
                   CArg<"double", "1e-5">:$epsilon), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input, gamma, beta,
            axis, ::llvm::APFloat(epsilon));
    }]>];
}

def PC_LayerNormGradOp : PC_ComputeOp<"layer_norm_grad"> {
  let summary = "The input gradient of pc.layer_norm, fused";
  let description = [{
    With `x̂` the normalized input and `r` the reciprocal standard deviation
    of each row (the dims from `axis` on), `g = grad · gamma`:
    `r · (g − mean(g) − x̂ · mean(g · x̂))`, in one pass per row: what
    pc-autodiff emits for the input of `pc.layer_norm` instead of a dozen
    elementwise ops and reductions. `grad` and `input` have one type;
    `gamma` has the normalized dims' shape.

    ```mlir
    %dx = pc.layer_norm_grad %dy, %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<8x64xf32>, tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$grad, PC_FloatTensor:$input,
                       PC_FloatTensor:$gamma,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$grad, "::mlir::Value":$input,
                   "::mlir::Value":$gamma, "int64_t":$axis,
                   "::llvm::APFloat":$epsilon), [{
      build($_builder, $_state, ::pc::infer::sameAs(grad), grad, input, gamma,
            axis, epsilon);
    }]>];
}

def PC_LayerNormScaleGradOp : PC_ComputeOp<"layer_norm_scale_grad"> {
  let summary = "The gradient of pc.layer_norm's scale, fused";
  let description = [{
    `Σ_rows grad · x̂`, with `x̂` the normalized input (the dims from `axis`
    on form a row): the gradient of the layer norm's `gamma`, in one pass
    that reads `grad` and `input` once, where pc-autodiff would otherwise
    normalize the input again, multiply and reduce (four passes). Rows are
    summed in order in f32, so the result has the bits of that chain.
    `grad` and `input` have one type; the result has the normalized dims'
    shape (gamma's).

    ```mlir
    %dgamma = pc.layer_norm_scale_grad %dy, %x {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$grad, PC_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs PC_FloatTensor:$result);
}

def PC_RmsNormOp : PC_ComputeOp<"rms_norm"> {
  let summary = "Root-mean-square normalization with a scale";
  let description = [{
    `input / sqrt(mean(input²) + epsilon) · gamma`, the mean taken over the
    trailing dims starting at `axis` (by default the last dim); `gamma` has
    the shape of those dims.

    ```mlir
    %y = pc.rms_norm %x, %g : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, PC_FloatTensor:$gamma,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-6">:$epsilon);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gamma,
                   CArg<"int64_t", "-1">:$axis,
                   CArg<"double", "1e-6">:$epsilon), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input, gamma,
            axis, ::llvm::APFloat(epsilon));
    }]>];
}

class PC_ReduceOp<string mnemonic, string what, TypeConstraint t = PC_Tensor>
    : PC_ComputeOp<mnemonic> {
  let summary = what # " over axes";
  let description = [{
    Reduces over the dims `axes` (distinct; negative values count from the
    back). They are removed from the result shape, or kept with size 1 under
    `keepdim`.

    ```mlir
    %s = pc.}] # mnemonic # [{ %x {axes = array<i64: 1>} : (tensor<8x64xf32>) -> tensor<8xf32>
    %k = pc.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdim} : (tensor<8x64xf32>) -> tensor<8x1xf32>
    ```
  }];
  let arguments = (ins t:$input, DenseI64ArrayAttr:$axes, UnitAttr:$keepdim);
  let results = (outs t:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$axes,
                   CArg<"bool", "false">:$keepdim), [{
      build($_builder, $_state, ::pc::infer::reduce(input, axes, keepdim),
            input, $_builder.getDenseI64ArrayAttr(axes),
            keepdim ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
    }]>];
}

def PC_ReduceSumOp : PC_ReduceOp<"reduce_sum", "Sum">;
def PC_ReduceMeanOp : PC_ReduceOp<"reduce_mean", "Mean", PC_FloatTensor>;
def PC_ReduceMaxOp : PC_ReduceOp<"reduce_max", "Maximum">;

def PC_ReshapeOp : PC_ComputeOp<"reshape"> {
  let summary = "Reinterprets the elements in row-major order as a new shape";
  let description = [{
    The result shape has the same number of elements and the same element
    type.

    ```mlir
    %y = pc.reshape %x : (tensor<8x64xf32>) -> tensor<8x4x16xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
}

def PC_AfterOp : PC_ComputeOp<"after"> {
  let summary = "Its input, passed on once another value exists";
  let description = [{
    The result is `input` itself: the runtime passes its memory on and moves
    no bytes. The op only waits for `dependency`, which may have any layout
    and is never moved for it. `pc-recompute` reads the values a recomputed
    forward segment starts from through `pc.after` the gradient that
    reaches the segment, so that the recomputation runs when the backward
    pass gets there, not as soon as its inputs exist (an actor fires once
    its operands are ready).

    ```mlir
    %x1 = pc.after %x, %dy : (tensor<8x64xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, PC_Tensor:$dependency);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$dependency), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input, dependency);
    }]>];
}

def PC_CopyOp : PC_ComputeOp<"copy"> {
  let summary = "Moves a tensor between device and host memory";
  let description = [{
    The same value in the other memory: in host memory when the op is
    marked `pc.host`, in device memory otherwise. `pc-offload` puts these
    between the optimizer step, which runs on the host over state kept
    there, and the device's work; the runtime runs them on a stream of
    their own, so that they overlap compute.

    ```mlir
    %g_host = pc.copy %g {pc.host} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input), [{
      build($_builder, $_state, input.getType(), input);
    }]>];
}

def PC_SelectOp : PC_ComputeOp<"select"> {
  let summary = "One of two tensors, picked by a scalar condition";
  let description = [{
    `on_true` where the 0-d float `condition` is nonzero, else `on_false`,
    both of the result's type. The pick is whole: a NaN or an infinity in
    the tensor not picked never reaches the result, which is why the
    optimizer's skipped steps (dynamic loss scaling) use it rather than
    arithmetic on a 0/1 mask.

    ```mlir
    %w2 = pc.select %ok, %new, %old
        : (tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$condition, PC_Tensor:$on_true,
                       PC_Tensor:$on_false);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$condition, "::mlir::Value":$onTrue,
                   "::mlir::Value":$onFalse), [{
      build($_builder, $_state, ::pc::infer::sameAs(onTrue), condition, onTrue,
            onFalse);
    }]>];
}

def PC_TransposeOp : PC_ComputeOp<"transpose"> {
  let summary = "Permutes dims";
  let description = [{
    Result dim `i` is operand dim `perm[i]`.

    ```mlir
    %y = pc.transpose %x {perm = array<i64: 0, 2, 1>}
        : (tensor<2x8x64xf32>) -> tensor<2x64x8xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$perm), [{
      build($_builder, $_state, ::pc::infer::transpose(input, perm), input,
            perm);
    }]>];
}

def PC_BroadcastToOp : PC_ComputeOp<"broadcast_to"> {
  let summary = "Broadcasts to a larger shape, as in NumPy";
  let description = [{
    The operand's shape must broadcast to the result shape: aligned from the
    back, each operand dim is 1 or equal to the result dim.

    ```mlir
    %y = pc.broadcast_to %b : (tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
}

def PC_SliceOp : PC_ComputeOp<"slice"> {
  let summary = "A contiguous box of a tensor";
  let description = [{
    Takes `[start[i], limit[i])` of every dim `i`, with
    `0 <= start <= limit <= size`.

    ```mlir
    %q = pc.slice %qkv {start = array<i64: 0, 0>, limit = array<i64: 8, 64>}
        : (tensor<8x192xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$start,
                   "::llvm::ArrayRef<int64_t>":$limit), [{
      build($_builder, $_state, ::pc::infer::slice(input, start, limit), input,
            start, limit);
    }]>];
}

def PC_ConcatOp : PC_ComputeOp<"concat"> {
  let summary = "Joins tensors along one dim";
  let description = [{
    The operands have one rank and element type, and equal sizes on every
    dim but `axis`.

    ```mlir
    %y = pc.concat %a, %b {axis = 1 : i64}
        : (tensor<8x16xf32>, tensor<8x48xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Variadic<PC_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs PC_Tensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$inputs, "int64_t":$axis), [{
      build($_builder, $_state, ::pc::infer::concat(inputs, axis), inputs,
            axis);
    }]>];
}

def PC_EmbeddingOp : PC_ComputeOp<"embedding"> {
  let summary = "Gathers rows of a table";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`. The result shape is the ids'
    shape followed by the table's row width. Ids outside `[0, rows)` are an
    error at run time, unless `zero_out_of_range` is set: then they give
    rows of zeros (a vocab-parallel piece of the table looks up only the
    ids in its rows).

    ```mlir
    %h = pc.embedding %ids, %wte : (tensor<4x128xi64>, tensor<50304x768xf32>)
        -> tensor<4x128x768xf32>
    ```
  }];
  let arguments = (ins PC_IndexTensor:$ids, PC_FloatTensor:$table,
                       UnitAttr:$zero_out_of_range);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$ids, "::mlir::Value":$table), [{
      build($_builder, $_state, ::pc::infer::embedding(ids, table), ids, table,
            ::mlir::UnitAttr());
    }]>];
}

def PC_CausalMaskOp : PC_ComputeOp<"causal_mask"> {
  let summary = "Masks attention scores above the diagonal";
  let description = [{
    On the last two dims `[query, key]`, keeps entries with `key <= query`
    and sets the others to -infinity, so that a following softmax gives them
    zero weight; with `zero`, to 0 instead (the mask's gradient, which
    pc-autodiff emits as one op). The result has the operand's type.

    ```mlir
    %m = pc.causal_mask %scores : (tensor<4x12x128x128xf32>) -> tensor<4x12x128x128xf32>
    %g = pc.causal_mask %dm {zero} : (tensor<4x12x128x128xf32>) -> tensor<4x12x128x128xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$input, UnitAttr:$zero);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, CArg<"bool", "false">:$zero), [{
      build($_builder, $_state, ::pc::infer::sameAs(input), input,
            zero ? $_builder.getUnitAttr() : ::mlir::UnitAttr());
    }]>];
}

def PC_CrossEntropyOp : PC_ComputeOp<"cross_entropy"> {
  let summary = "Sparse softmax cross-entropy with integer labels";
  let description = [{
    Per-example loss `logsumexp(logits[i..., :]) - logits[i..., labels[i...]]`
    over the last (class) dim of `logits`. `labels` has the shape of
    `logits` without its last dim, and so does the result. Labels outside
    `[0, classes)` are an error at run time.

    ```mlir
    %l = pc.cross_entropy %logits, %labels : (tensor<512x50304xf32>, tensor<512xi64>)
        -> tensor<512xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$logits, PC_IndexTensor:$labels);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels), [{
      build($_builder, $_state, ::pc::infer::crossEntropy(logits, labels),
            logits, labels);
    }]>];
}

//===----------------------------------------------------------------------===//
// Ops that gradients are made of
//===----------------------------------------------------------------------===//

def PC_ComparisonEnum : I32EnumAttr<"Comparison", "an elementwise comparison", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::pc";
  let genSpecializedAttr = 0;
}

def PC_Comparison : EnumAttr<Pc_Dialect, PC_ComparisonEnum, "comparison"> {
  let summary = "An elementwise comparison: eq, ne, lt, le, gt or ge";
  let assemblyFormat = "`<` $value `>`";
}

def PC_CompareOp : PC_ComputeOp<"compare"> {
  let summary = "Elementwise comparison, as a mask of ones and zeros";
  let description = [{
    1 where `lhs predicate rhs` holds and 0 elsewhere, in the operands'
    float type, with NumPy broadcasting. Gradients use it as a mask (where a
    relu passed, which elements were the maximum); it has no gradient
    itself.

    ```mlir
    %m = pc.compare %x, %zero {predicate = #pc.comparison<gt>}
        : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins PC_FloatTensor:$lhs, PC_FloatTensor:$rhs,
                       PC_Comparison:$predicate);
  let results = (outs PC_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                   "::pc::Comparison":$predicate), [{
      build($_builder, $_state, ::pc::infer::broadcast(lhs, rhs), lhs, rhs,
            predicate);
    }]>];
}

def PC_OneHotOp : PC_ComputeOp<"one_hot"> {
  let summary = "Integer labels as one-hot rows";
  let description = [{
    `result[i..., c] = (labels[i...] == c)` for `c` in `[0, classes)`, where
    `classes` is the result's last dim, in the result's float type. A label
    outside the classes gives a row of zeros. The gradient of a
    cross-entropy is `softmax(logits) - one_hot(labels)`.

    ```mlir
    %h = pc.one_hot %labels : (tensor<512xi64>) -> tensor<512x50304xf32>
    ```
  }];
  let arguments = (ins PC_IndexTensor:$labels);
  let results = (outs PC_FloatTensor:$result);
}

def PC_EmbeddingGradOp : PC_ComputeOp<"embedding_grad"> {
  let summary = "The gradient of an embedding's table: rows summed by id";
  let description = [{
    The table-shaped tensor whose row `r` is the sum of the rows of `grad`
    whose id is `r`: `result[ids[i...], :] += grad[i..., :]`, the transpose
    of `pc.embedding`. `grad` has the ids' shape followed by the row width;
    the result's first dim is the table's row count. Ids outside the rows
    add nothing.

    ```mlir
    %dw = pc.embedding_grad %ids, %dh : (tensor<4x128xi64>, tensor<4x128x768xf32>)
        -> tensor<50304x768xf32>
    ```
  }];
  let arguments = (ins PC_IndexTensor:$ids, PC_FloatTensor:$grad);
  let results = (outs PC_FloatTensor:$result);
}

def PC_CastOp : PC_ComputeOp<"cast"> {
  let summary = "Converts the element type";
  let description = [{
    Converts between f32, f16, bf16, i32 and i64; the shape is kept. Float
    to int rounds toward zero.

    ```mlir
    %h = pc.cast %x : (tensor<8x64xf32>) -> tensor<8x64xbf16>
    ```
  }];
  let arguments = (ins PC_Tensor:$input);
  let results = (outs PC_Tensor:$result);
}

def PC_ConstantOp : PC_TensorOp<"constant", [ConstantLike, Pure]> {
  let summary = "A constant tensor, or a tensor filled with one value";
  let description = [{
    The value is a dense elements attribute with the result's shape and
    element type; a splat is a fill and costs no storage.

    ```mlir
    %z = pc.constant dense<0.0> : tensor<1024x1024xf32>
    %c = pc.constant dense<[1, 2, 3]> : tensor<3xi64, #pc.sbp<@m, [B]>>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs PC_Tensor:$result);
  // `dense<...> : type`, where the type is the result type, SBP included;
  // the stored value has the same type without the encoding.
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "dialect/CollectiveOps.td"

#endif // PC_OPS_TD
