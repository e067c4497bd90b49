// RUN: pc-opt %s --split-input-file --verify-diagnostics

// Every shape and attribute rule of the logical compute ops has a test.

func.func @f(%a: tensor<4x8xf32>, %b: tensor<16x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op contraction sizes differ: lhs 4x8 has k = 8 but rhs 16x2 has k = 16}}
  %0 = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<2x16xf32>) {
  // expected-error @+1 {{'pc.matmul' op contraction sizes differ: lhs 4x8 (transposed) has k = 4 but rhs 2x16 (transposed) has k = 16}}
  %0 = pc.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<4x8xf32>, tensor<2x16xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op alpha must be finite}}
  %0 = pc.matmul %a, %b {alpha = 0x7FF0000000000000 : f64} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<3x4x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op addend shape 3x4x2 does not broadcast to the result shape 4x2}}
  %0 = pc.matmul %a, %b, %c : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<3x4x2xf32>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf16>) {
  // expected-error @+1 {{'pc.matmul' op operand #2 has element type 'f16' but operand #0 has 'f32'}}
  %0 = pc.matmul %a, %b, %c : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op operands need rank >= 2, but lhs is 8 and rhs is 8x2}}
  %0 = pc.matmul %a, %b : (tensor<8xf32>, tensor<8x2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @f(%a: tensor<3x4x8xf32>, %b: tensor<2x8x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op batch dims: operand shapes 3 and 2 do not broadcast: dim 0 of the result would need 3 and 2}}
  %0 = pc.matmul %a, %b : (tensor<3x4x8xf32>, tensor<2x8x2xf32>) -> tensor<3x4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) {
  // expected-error @+1 {{'pc.matmul' op result shape 4x3 does not match the inferred shape 4x2}}
  %0 = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf16>) {
  // expected-error @+1 {{'pc.matmul' op operand #1 has element type 'f16' but operand #0 has 'f32'}}
  %0 = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf16>) -> tensor<4x2xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xi32>, %b: tensor<8x2xi32>) {
  // expected-error @+1 {{'pc.matmul' op operand #0 must be ranked tensor of}}
  %0 = pc.matmul %a, %b : (tensor<4x8xi32>, tensor<8x2xi32>) -> tensor<4x2xi32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3x8xf32>) {
  // expected-error @+1 {{'pc.add' op operand shapes 4x8 and 3x8 do not broadcast: dim 0 of the result would need 4 and 3}}
  %0 = pc.add %a, %b : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'pc.mul' op result shape 8 does not match the inferred shape 4x8}}
  %0 = pc.mul %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xi32>) {
  // expected-error @+1 {{'pc.sub' op operand #1 has element type 'i32' but operand #0 has 'f32'}}
  %0 = pc.sub %a, %b : (tensor<4x8xf32>, tensor<8xi32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'pc.div' op result element type 'f16' should be 'f32'}}
  %0 = pc.div %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'pc.tanh' op result shape 5 does not match the inferred shape 4}}
  %0 = pc.tanh %a : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @f(%a: tensor<4xi32>) {
  // expected-error @+1 {{'pc.exp' op operand #0 must be ranked tensor of}}
  %0 = pc.exp %a : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.softmax' op axis 2 is out of range for a rank-2 tensor}}
  %0 = pc.softmax %a {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.log_softmax' op axis -3 is out of range for a rank-2 tensor}}
  %0 = pc.log_softmax %a {axis = -3 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'pc.layer_norm' op gamma has shape 4 but must have the normalized shape 8 (dims 1 and on of 4x8)}}
  %0 = pc.layer_norm %a, %g, %g : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.layer_norm' op beta has shape 4x8 but must have the normalized shape 8}}
  %0 = pc.layer_norm %a, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'pc.layer_norm' op epsilon must be positive, not 0}}
  %0 = pc.layer_norm %a, %g, %g {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'pc.layer_norm' op operand #1 has element type 'f16' but operand #0 has 'f32'}}
  %0 = pc.layer_norm %a, %g, %g : (tensor<4x8xf32>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'pc.layer_norm' op axis 2 is out of range for a rank-2 tensor}}
  %0 = pc.layer_norm %a, %g, %g {axis = 2 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.rms_norm' op gamma has shape 4x8 but must have the normalized shape 8}}
  %0 = pc.rms_norm %a, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'pc.rms_norm' op epsilon must be positive, not -1}}
  %0 = pc.rms_norm %a, %g {epsilon = -1.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reduce_sum' op axes must not be empty}}
  %0 = pc.reduce_sum %a {axes = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reduce_max' op axis -1 appears twice in axes}}
  %0 = pc.reduce_max %a {axes = array<i64: 1, -1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reduce_mean' op axis 5 is out of range for a rank-2 tensor}}
  %0 = pc.reduce_mean %a {axes = array<i64: 5>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reduce_sum' op result shape 4 does not match the inferred shape 4x1}}
  %0 = pc.reduce_sum %a {axes = array<i64: 1>, keepdim} : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reshape' op cannot reshape 4x8 (32 elements) to 5x6 (30 elements)}}
  %0 = pc.reshape %a : (tensor<4x8xf32>) -> tensor<5x6xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.reshape' op result element type 'f16' should be 'f32'}}
  %0 = pc.reshape %a : (tensor<4x8xf32>) -> tensor<32xf16>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.transpose' op perm has 3 entries for a rank-2 tensor}}
  %0 = pc.transpose %a {perm = array<i64: 0, 1, 2>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.transpose' op perm [1, 1] is not a permutation of 0..1}}
  %0 = pc.transpose %a {perm = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.transpose' op result shape 4x8 does not match the inferred shape 8x4}}
  %0 = pc.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<3x8xf32>) {
  // expected-error @+1 {{'pc.broadcast_to' op operand shape 3x8 does not broadcast to the result shape 4x8}}
  %0 = pc.broadcast_to %a : (tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<2x3x8xf32>) {
  // expected-error @+1 {{'pc.broadcast_to' op operand shape 2x3x8 does not broadcast to the result shape 3x8}}
  %0 = pc.broadcast_to %a : (tensor<2x3x8xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.slice' op start and limit need one entry per dim of the rank-2 operand, but have 1 and 2}}
  %0 = pc.slice %a {start = array<i64: 0>, limit = array<i64: 4, 8>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.slice' op dim 1: the range [2, 9) is not within [0, 8]}}
  %0 = pc.slice %a {start = array<i64: 0, 2>, limit = array<i64: 4, 9>} : (tensor<4x8xf32>) -> tensor<4x7xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.slice' op dim 0: the range [3, 1) is not within [0, 4]}}
  %0 = pc.slice %a {start = array<i64: 3, 0>, limit = array<i64: 1, 8>} : (tensor<4x8xf32>) -> tensor<0x8xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'pc.concat' op needs at least one operand}}
  %0 = pc.concat {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'pc.concat' op operand #1 has rank 1 but operand #0 has rank 2}}
  %0 = pc.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<12x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{'pc.concat' op operand #1 (4x6) differs from operand #0 (4x8) in dim 1, which is not the concat axis}}
  %0 = pc.concat %a, %b {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x6xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.concat' op axis 2 is out of range for a rank-2 tensor}}
  %0 = pc.concat %a, %a {axis = 2 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xi32>) {
  // expected-error @+1 {{'pc.concat' op operand #1 has element type 'i32' but operand #0 has 'f32'}}
  %0 = pc.concat %a, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xi32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %t: tensor<100xf32>) {
  // expected-error @+1 {{'pc.embedding' op the table must be rank 2 (rows x width), not 100}}
  %0 = pc.embedding %ids, %t : (tensor<4xi64>, tensor<100xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xf32>, %t: tensor<100x8xf32>) {
  // expected-error @+1 {{'pc.embedding' op operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = pc.embedding %ids, %t : (tensor<4xf32>, tensor<100x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %t: tensor<100x8xf32>) {
  // expected-error @+1 {{'pc.embedding' op result shape 4x100 does not match the inferred shape 4x8}}
  %0 = pc.embedding %ids, %t : (tensor<4xi64>, tensor<100x8xf32>) -> tensor<4x100xf32>
  return
}

// -----

func.func @f(%a: tensor<8xf32>) {
  // expected-error @+1 {{'pc.causal_mask' op needs rank >= 2 ([..., query, key]), not 8}}
  %0 = pc.causal_mask %a : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%l: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error @+1 {{'pc.cross_entropy' op labels have shape 5 but logits 4x10 need labels of shape 4}}
  %0 = pc.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{'pc.cross_entropy' op logits need a class dim, but are a scalar}}
  %0 = pc.cross_entropy %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @f(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'pc.cross_entropy' op result element type 'f16' should be 'f32'}}
  %0 = pc.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf16>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.cast' op changes the shape from 4x8 to 32; a cast keeps the shape}}
  %0 = pc.cast %a : (tensor<4x8xf32>) -> tensor<32xi32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>) {
  // expected-error @+1 {{'pc.cast' op result #0 must be ranked tensor of}}
  %0 = pc.cast %a : (tensor<4xf32>) -> tensor<4xf64>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'pc.constant' op value of type 'tensor<3xf32>' does not match the result type 'tensor<4xf32>'}}
  %0 = "pc.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<4xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{expected a dense elements literal, such as dense<0.0> : tensor<4xf32>}}
  %0 = pc.constant 1.0 : f32
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{expected a ranked tensor type}}
  %0 = pc.constant dense<1.0> : vector<4xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{'pc.compare' op operand #1 has element type 'f16' but operand #0 has 'f32'}}
  %0 = pc.compare %a, %b {predicate = #pc.comparison<gt>} : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'pc.compare' op}}
  %0 = pc.compare %a, %b {predicate = #pc.comparison<eq>} : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%y: tensor<4xi64>) {
  // expected-error @+1 {{'pc.one_hot' op result shape 5x10 should be the labels' shape 4 and a class dim}}
  %0 = pc.one_hot %y : (tensor<4xi64>) -> tensor<5x10xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %g: tensor<3x8xf32>) {
  // expected-error @+1 {{'pc.embedding_grad' op grad shape 3x8 should be the ids' shape 4 and a row width}}
  %0 = pc.embedding_grad %ids, %g : (tensor<4xi64>, tensor<3x8xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.embedding_grad' op result shape 16x4 should be [rows, 8]}}
  %0 = pc.embedding_grad %ids, %g : (tensor<4xi64>, tensor<4x8xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.embedding_grad' op result element type should be 'f32'}}
  %0 = pc.embedding_grad %ids, %g : (tensor<4xi64>, tensor<4x8xf32>) -> tensor<16x8xf16>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.gelu_grad' op operands have shapes 8x4 and 4x8; they must be the same}}
  %0 = pc.gelu_grad %dy, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<8x4xbf16>) {
  // expected-error @+1 {{'pc.gelu_grad' op operand #1 has element type 'bf16' but operand #0 has 'f32'}}
  %0 = pc.gelu_grad %dy, %x : (tensor<8x4xf32>, tensor<8x4xbf16>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %y: tensor<8x4xf32>) {
  // expected-error @+1 {{'pc.softmax_grad' op result must have the operands' type}}
  %0 = pc.softmax_grad %dy, %y {axis = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %y: tensor<8x4xf32>) {
  // expected-error @+1 {{'pc.softmax_grad' op}}
  %0 = pc.softmax_grad %dy, %y {axis = 2 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%w: tensor<8xf32>, %g: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'pc.adam_update' op operand #1 has shape 4; the weight's is 8}}
  %0:3 = pc.adam_update %w, %g, %w, %w, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%w: tensor<8xf32>, %s: tensor<1xf32>) {
  // expected-error @+1 {{'pc.adam_update' op operand #4 must be a scalar (rank 0)}}
  %0:3 = pc.adam_update %w, %w, %w, %w, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%w: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'pc.adam_update' op beta1 and beta2 must be in [0, 1)}}
  %0:3 = pc.adam_update %w, %w, %w, %w, %s, %s, %s {beta1 = 1.0 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<8x4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'pc.layer_norm_grad' op}}
  %0 = pc.layer_norm_grad %dy, %x, %g : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<8x4xf32>) {
  // expected-error @+1 {{'pc.layer_norm_scale_grad' op result has shape 8 but must have the normalized shape 4 (dims 1 and on of 8x4)}}
  %0 = pc.layer_norm_scale_grad %dy, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %x: tensor<4x8xf32>) {
  // expected-error @+1 {{'pc.layer_norm_scale_grad' op operands have shapes 8x4 and 4x8; they must be the same}}
  %0 = pc.layer_norm_scale_grad %dy, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'pc.softmax' op is causal, which normalizes the last dim (the keys), but its axis is 0}}
  %0 = pc.softmax %x {axis = 0 : i64, causal} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{'pc.softmax' op is causal, which needs [query, key] matrices in the last two dims, but its operand has rank 1}}
  %0 = pc.softmax %x {axis = -1 : i64, causal} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @f(%dy: tensor<8x4xf32>, %y: tensor<8x4xf32>) {
  // expected-error @+1 {{'pc.softmax_grad' op is causal, which normalizes the last dim (the keys), but its axis is 0}}
  %0 = pc.softmax_grad %dy, %y {axis = 0 : i64, causal} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}
