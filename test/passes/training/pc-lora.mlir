// RUN: pc-opt %s --pc-lora="rank=2 alpha=4 targets=q$" | FileCheck %s
// RUN: pc-opt %s --pc-lora="rank=2 alpha=4 targets=q$" --pc-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not pc-opt %s --pc-lora="targets=nothing" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not pc-opt %s --pc-lora="rank=0" 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not pc-opt %s --pc-lora="targets=(" 2>&1 | FileCheck %s --check-prefix=RANK

// A column-parallel query weight [B, S(1)] gets A [in, r] replicated and B
// [r, out] split like the weight's output dim; the weight and every other
// parameter are frozen. The transposed read of @k is left alone.
// CHECK: pc.param @q : tensor<8x8xf32, #pc.sbp<@m, [S(1)]>> = #pc.init<normal(std = 1.000000e-01)> {trainable = false}
// CHECK-NEXT: pc.param @q.lora_a : tensor<8x2xf32, #pc.sbp<@m, [B]>> = #pc.init<uniform(low = -0.35355339059327373, high = 0.35355339059327373)>
// CHECK-NEXT: pc.param @q.lora_b : tensor<2x8xf32, #pc.sbp<@m, [S(1)]>> = #pc.init<zeros>
// CHECK-NEXT: pc.param @kq : tensor<8x8xf32> = #pc.init<normal(std = 1.000000e-01)> {trainable = false}
// CHECK-NEXT: pc.param @norm : tensor<8xf32> = #pc.init<ones> {trainable = false}

// y = x·W + (alpha / r)·(x·A)·B, the scale in the second matmul's alpha.
// CHECK-LABEL: func.func @f
// CHECK: %[[W:.*]] = pc.get_param @q
// CHECK: %[[Y:.*]] = pc.matmul %arg0, %[[W]] :
// CHECK-NEXT: %[[A:.*]] = pc.get_param @q.lora_a
// CHECK-NEXT: %[[XA:.*]] = pc.matmul %arg0, %[[A]] :
// CHECK-NEXT: %[[B:.*]] = pc.get_param @q.lora_b
// CHECK-NEXT: %[[XAB:.*]] = pc.matmul %[[XA]], %[[B]] {alpha = 2.000000e+00 : f64}
// CHECK-NEXT: %[[SUM:.*]] = pc.add %[[Y]], %[[XAB]]
// CHECK-NEXT: pc.tanh %[[SUM]]
// CHECK: pc.matmul %{{.*}}, %{{.*}} {transpose_rhs}
// CHECK-NOT: lora

// Only the adapters get gradients.
// GRAD: -> (tensor<f32> {pc.loss}, tensor<8x2xf32> {pc.grad = @q.lora_a, pc.name = "q.lora_a.grad"}, tensor<2x8xf32> {pc.grad = @q.lora_b, pc.name = "q.lora_b.grad"})

// NOMATCH: error: --pc-lora: no matmul weight's name matches 'nothing'
// RANK: error: --pc-lora: needs rank >= 1, alpha > 0 and a valid targets pattern

pc.mesh @m <["tp"=2]>
pc.param @q : tensor<8x8xf32, #pc.sbp<@m, [S(1)]>> = #pc.init<normal(std = 0.1)>
pc.param @kq : tensor<8x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @norm : tensor<8xf32> = #pc.init<ones>
func.func @f(%x: tensor<4x8xf32>) -> (tensor<f32> {pc.loss}) {
  %w = pc.get_param @q : tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>
  %y = pc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32, #pc.sbp<@m, [S(1)]>>) -> tensor<4x8xf32>
  %t = pc.tanh %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = pc.get_param @kq : tensor<8x8xf32>
  %z = pc.matmul %t, %k {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %n = pc.get_param @norm : tensor<8xf32>
  %s = pc.mul %z, %n : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = pc.reduce_sum %s {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
