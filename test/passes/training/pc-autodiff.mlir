// RUN: pc-opt %s --pc-autodiff | FileCheck %s
// RUN: pc-opt %s --pc-autodiff --pc-distribute -o /dev/null

// A linear layer with a bias and a frozen scale, a mean squared loss. The
// weight's gradient is one matmul x^T dy; the bias's a sum over rows; the
// frozen scale gets none, and nothing is computed for it.

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<4x3xf32> = #pc.init<normal(std = 0.1)>
pc.param @b : tensor<3xf32> = #pc.init<zeros>
pc.param @scale : tensor<3xf32> = #pc.init<ones> {trainable = false}

// CHECK-LABEL: func.func @train
// CHECK-SAME: -> (tensor<f32> {pc.loss}, tensor<4x3xf32> {pc.grad = @w, pc.name = "w.grad"}, tensor<3xf32> {pc.grad = @b, pc.name = "b.grad"})
func.func @train(%x: tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>) -> (tensor<f32> {pc.loss}) {
  %w = pc.get_param @w : tensor<4x3xf32>
  %b = pc.get_param @b : tensor<3xf32>
  %s = pc.get_param @scale : tensor<3xf32>
  %h = pc.matmul %x, %w : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %y = pc.add %h, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %z = pc.mul %y, %s : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %sq = pc.mul %z, %z : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %l = pc.reduce_mean %sq {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  // The seed, d loss / d loss = 1.
  // CHECK: %[[SEED:.*]] = pc.constant dense<1.000000e+00> : tensor<f32>
  // d/d z of mean(z^2): the seed over the 24 elements, then both factors
  // of the product.
  // CHECK: pc.constant dense<0.0416666679> : tensor<f32>
  // CHECK: %[[DZ1:.*]] = pc.mul %{{.*}}, %[[Z:[^ ]*]] : (tensor<8x3xf32>, tensor<8x3xf32>)
  // CHECK: %[[DZ2:.*]] = pc.mul %{{.*}}, %[[Z]] :
  // CHECK: %[[DZ:.*]] = pc.add %[[DZ1]], %[[DZ2]]
  // Through the frozen scale (to y), not into it.
  // CHECK: %[[DY:.*]] = pc.mul %[[DZ]], %{{.*}} : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  // CHECK-NOT: pc.reduce_sum %{{.*}} -> tensor<3xf32>
  // The bias: summed over the rows it was broadcast along.
  // CHECK: %[[DBK:.*]] = pc.reduce_sum %[[DY]] {axes = array<i64: 0>, keepdim} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  // CHECK: %[[DB:.*]] = pc.reshape %[[DBK]] : (tensor<1x3xf32>) -> tensor<3xf32>
  // The weight: x^T dy.
  // CHECK: %[[DW:.*]] = pc.matmul %arg0, %[[DY]] {transpose_lhs}
  // CHECK: return %{{.*}}, %[[DW]], %[[DB]] : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
  return %l : tensor<f32>
}

// A graph without a loss is left alone.
// CHECK-LABEL: func.func @inference
// CHECK-SAME: -> tensor<8x3xf32>
func.func @inference(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %w = pc.get_param @w : tensor<4x3xf32>
  %h = pc.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %h : tensor<8x3xf32>
}

// Attention's and the MLP's nonlinearities get fused gradients: one op each
// for the GELU and the softmax, and the causal mask's gradient is the mask
// of the gradient with zeros (no mask constant, no exp, no multiply).
pc.param @a : tensor<2x4x4xf32> = #pc.init<normal(std = 0.1)>

// CHECK-LABEL: func.func @attention
func.func @attention() -> (tensor<f32> {pc.loss}) {
  %a = pc.get_param @a : tensor<2x4x4xf32>
  %m = pc.causal_mask %a : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = pc.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %g = pc.gelu %p {approximate} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %l = pc.reduce_sum %g {axes = array<i64: 0, 1, 2>} : (tensor<2x4x4xf32>) -> tensor<f32>
  // CHECK: %[[DP:.*]] = pc.gelu_grad %{{.*}}, %[[P:[^ ]*]] {approximate}
  // CHECK-NEXT: %[[DM:.*]] = pc.softmax_grad %[[DP]], %[[P]] {axis = -1 : i64}
  // CHECK-NEXT: %[[DA:.*]] = pc.causal_mask %[[DM]] {zero}
  // CHECK-NOT: pc.exp
  // CHECK: return %{{.*}}, %[[DA]]
  return %l : tensor<f32>
}

// A layer norm's input gradient is one fused op; its scale's gradient uses
// the normalized input, the layer norm with scale 1 and shift 0.
pc.param @ln.x : tensor<4x8xf32> = #pc.init<normal(std = 1.0)>
pc.param @ln.g : tensor<8xf32> = #pc.init<ones>
pc.param @ln.b : tensor<8xf32> = #pc.init<zeros> {trainable = false}

// CHECK-LABEL: func.func @norm
func.func @norm() -> (tensor<f32> {pc.loss}) {
  %x = pc.get_param @ln.x : tensor<4x8xf32>
  %g = pc.get_param @ln.g : tensor<8xf32>
  %b = pc.get_param @ln.b : tensor<8xf32>
  %y = pc.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = pc.reduce_sum %y {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  // CHECK: %[[X:.*]] = pc.get_param @ln.x
  // CHECK: pc.layer_norm_grad %{{.*}}, %[[X]], %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  // CHECK-NOT: pc.reduce_mean
  // CHECK: pc.layer_norm_scale_grad %{{.*}}, %[[X]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
  // CHECK-NOT: pc.layer_norm
  // CHECK: return
  return %l : tensor<f32>
}
