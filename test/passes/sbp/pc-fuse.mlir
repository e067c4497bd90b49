// RUN: pc-opt %s --pc-fuse | FileCheck %s
// RUN: pc-opt %s --pc-fuse="scale=false mask=false causal=false addend=false" | FileCheck %s --check-prefix=OFF

// An attention's scores: the scale folds into the matmul that makes them,
// whose only use it is; the constant goes with it.
// CHECK-LABEL: func.func @scores
// CHECK-NEXT: %[[S:.*]] = pc.matmul %arg0, %arg1 {alpha = 1.250000e-01 : f64, transpose_rhs}
// CHECK-NEXT: return %[[S]]
// OFF-LABEL: func.func @scores
// OFF: pc.mul
func.func @scores(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  %c = pc.constant dense<0.125> : tensor<f32>
  %s = pc.matmul %q, %k {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %ss = pc.mul %c, %s : (tensor<f32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %ss : tensor<2x8x8xf32>
}

// Its backward: dS scaled once for two matmuls; each takes the scale, and
// an existing alpha multiplies.
// CHECK-LABEL: func.func @backward
// CHECK-NOT: pc.mul
// CHECK: pc.matmul %arg0, %arg1 {alpha = 1.250000e-01 : f64}
// CHECK: pc.matmul %arg0, %arg2 {alpha = 2.500000e-01 : f64, transpose_lhs}
// CHECK-NOT: pc.constant
func.func @backward(%ds: tensor<2x8x8xf32>, %k: tensor<2x8x4xf32>, %q: tensor<2x8x4xf32>)
    -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %c = pc.constant dense<0.125> : tensor<f32>
  %d = pc.mul %ds, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %dq = pc.matmul %d, %k : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dk = pc.matmul %d, %q {alpha = 2.0 : f64, transpose_lhs} : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %dq, %dk : tensor<2x8x4xf32>, tensor<2x8x4xf32>
}

// Both operands of one matmul: it scales by the square.
// CHECK-LABEL: func.func @gram
// CHECK-NEXT: pc.matmul %arg0, %arg0 {alpha = 9.000000e+00 : f64, transpose_rhs}
func.func @gram(%x: tensor<4x3xf32>) -> tensor<4x4xf32> {
  %c = pc.constant dense<3.0> : tensor<f32>
  %y = pc.mul %x, %c : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %g = pc.matmul %y, %y {transpose_rhs} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// What does not fold: a matmul with another use, a product that another
// op reads too, a scale that is not a scalar constant, a product that
// broadcasts; the constant another op reads stays.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: pc.mul
func.func @kept(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %s: tensor<f32>, %v: tensor<1x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %c = pc.constant dense<0.5> : tensor<f32>
  %m = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %0 = pc.mul %m, %c : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %x = pc.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = pc.matmul %x, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %e = pc.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = pc.matmul %e, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %n = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %3 = pc.mul %n, %s : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %p = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %4 = pc.mul %p, %v : (tensor<4x2xf32>, tensor<1x2xf32>) -> tensor<4x2xf32>
  return %m, %0, %1, %2, %3, %4 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// An attention's backward through its causal mask: the softmax gradient is
// already 0 above the diagonal, so the mask's gradient goes. Not when the
// softmax did not read masked scores, or its axis is not the last.
// CHECK-LABEL: func.func @mask_backward
// CHECK: %[[D:.*]] = pc.softmax_grad %arg1, %{{.*}} {axis = -1
// CHECK-NEXT: pc.softmax %arg0
// CHECK-NEXT: pc.softmax_grad
// CHECK-NEXT: pc.causal_mask {{.*}} {zero}
// CHECK-NEXT: pc.softmax
// CHECK-NEXT: pc.softmax_grad
// CHECK-NEXT: pc.causal_mask {{.*}} {zero}
// CHECK-NEXT: return %[[D]],
// OFF-LABEL: func.func @mask_backward
// OFF-COUNT-3: {zero}
func.func @mask_backward(%x: tensor<2x4x4xf32>, %dy: tensor<2x4x4xf32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %m = pc.causal_mask %x : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = pc.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %d = pc.softmax_grad %dy, %p {axis = -1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %g = pc.causal_mask %d {zero} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %q = pc.softmax %x {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e = pc.softmax_grad %dy, %q {axis = -1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %k1 = pc.causal_mask %e {zero} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %r = pc.softmax %m {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %f = pc.softmax_grad %dy, %r {axis = 1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %k2 = pc.causal_mask %f {zero} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %g, %k1, %k2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// A causal mask folds into the softmax over the last dim that reads it,
// and that softmax's gradient becomes causal; the mask goes with its last
// use. A softmax over another axis keeps its mask, and so does a
// log-softmax.
// CHECK-LABEL: func.func @causal_fold
// CHECK-NEXT: %[[P:.*]] = pc.softmax %arg0 {axis = -1 : i64, causal}
// CHECK-NEXT: %[[D:.*]] = pc.softmax_grad %arg1, %[[P]] {axis = -1 : i64, causal}
// CHECK-NEXT: %[[M:.*]] = pc.causal_mask %arg0
// CHECK-NEXT: pc.softmax %[[M]] {axis = 1 : i64}
// CHECK-NEXT: pc.log_softmax %[[M]] {axis = -1 : i64}
// CHECK-NEXT: return %[[P]], %[[D]],
// OFF-LABEL: func.func @causal_fold
// OFF-NOT: causal}
// OFF: return
func.func @causal_fold(%x: tensor<2x4x4xf32>, %dy: tensor<2x4x4xf32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %m = pc.causal_mask %x : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = pc.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %d = pc.softmax_grad %dy, %p {axis = -1 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %n = pc.causal_mask %x : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %r = pc.softmax %n {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %l = pc.log_softmax %n {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %p, %d, %r, %l : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// A residual add and a bias: each becomes its matmul's addend (either
// operand order); the add goes.
// CHECK-LABEL: func.func @residual
// CHECK-NEXT: %[[H:.*]] = pc.matmul %arg0, %arg1, %arg0 : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = pc.matmul %[[H]], %arg1, %arg2 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @residual
// OFF-COUNT-2: pc.add
func.func @residual(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %p = pc.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h = pc.add %x, %p : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q = pc.matmul %h, %w {transpose_rhs} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y = pc.add %q, %b : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// The gradient of an input that three matmuls read (an attention's q, k
// and v projections): the sum of three products becomes a chain, each
// product adding the one made before it.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[A:.*]] = pc.matmul %arg0, %arg3 {transpose_rhs}
// CHECK-NEXT: %[[B:.*]] = pc.matmul %arg1, %arg4, %[[A]] {transpose_rhs}
// CHECK-NEXT: %[[C:.*]] = pc.matmul %arg2, %arg5, %[[B]] {transpose_rhs}
// CHECK-NEXT: return %[[C]]
func.func @chain(%dq: tensor<8x4xf32>, %dk: tensor<8x4xf32>, %dv: tensor<8x4xf32>,
                 %wq: tensor<6x4xf32>, %wk: tensor<6x4xf32>, %wv: tensor<6x4xf32>) -> tensor<8x6xf32> {
  %a = pc.matmul %dq, %wq {transpose_rhs} : (tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x6xf32>
  %b = pc.matmul %dk, %wk {transpose_rhs} : (tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x6xf32>
  %s = pc.add %a, %b : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %c = pc.matmul %dv, %wv {transpose_rhs} : (tensor<8x4xf32>, tensor<6x4xf32>) -> tensor<8x6xf32>
  %t = pc.add %s, %c : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  return %t : tensor<8x6xf32>
}

// What keeps its add: a product with another use, and a sum that widens
// the product. And a product with an addend keeps the scale that
// multiplies it (alpha scales the product alone).
// CHECK-LABEL: func.func @kept_adds
// CHECK-COUNT-2: pc.add
// CHECK: %[[M:.*]] = pc.matmul %arg0, %arg1, %arg3 {alpha = 5.000000e-01 : f64}
// CHECK-NEXT: %[[S:.*]] = pc.mul %[[M]]
func.func @kept_adds(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %wide: tensor<3x4x2xf32>, %r: tensor<4x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<3x4x2xf32>, tensor<4x2xf32>) {
  %m = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %0 = pc.add %m, %r : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %n = pc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %1 = pc.add %n, %wide : (tensor<4x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
  %c = pc.constant dense<0.5> : tensor<f32>
  %h = pc.matmul %a, %b, %r {alpha = 0.5 : f64} : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %2 = pc.mul %h, %c : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  return %m, %0, %1, %2 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<3x4x2xf32>, tensor<4x2xf32>
}

// A scaled addend stays scaled: alpha scales the product, never the addend.
// CHECK-LABEL: func.func @scaled_addend
// CHECK-NEXT: pc.constant
// CHECK-NEXT: %[[Y:.*]] = pc.mul %arg2, %{{.*}}
// CHECK-NEXT: pc.matmul %arg0, %arg1, %[[Y]] : (
func.func @scaled_addend(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %r: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %c = pc.constant dense<0.5> : tensor<f32>
  %y = pc.mul %r, %c : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %m = pc.matmul %a, %b, %y : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %m : tensor<4x2xf32>
}
