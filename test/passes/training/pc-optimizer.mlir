// RUN: pc-opt %s --pc-autodiff --pc-optimizer="kind=adamw weight-decay=0.1 clip-norm=1.0" | FileCheck %s
// RUN: pc-opt %s --pc-autodiff --pc-optimizer="kind=sgd momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: pc-opt %s --pc-autodiff --pc-optimizer --pc-sbp-propagate --pc-insert-boxing --pc-boxing-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=DP

// A data-parallel linear model: the input split over dp, the weights
// without a layout (so stored replicated).

pc.mesh @m <["dp"=2]>
pc.param @w : tensor<4x3xf32> = #pc.init<normal(std = 0.1)>
pc.param @b : tensor<3xf32> = #pc.init<zeros>

// The weights get the mesh's replicated layout, and their state its own
// parameters in that layout; one step counter for the bias corrections.
// CHECK: pc.param @w : tensor<4x3xf32, #pc.sbp<@m, [B]>>
// CHECK-NEXT: pc.param @w.adam_m : tensor<4x3xf32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// CHECK-NEXT: pc.param @w.adam_v : tensor<4x3xf32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// CHECK: pc.param @optimizer.step : tensor<f32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// SGD: pc.param @w.momentum : tensor<4x3xf32, #pc.sbp<@m, [B]>> = #pc.init<zeros> {pc.optimizer_state, trainable = false}
// SGD-NOT: adam
// SGD-NOT: optimizer.step

// The rate is an input; the gradients are consumed, the norm returned.
// CHECK-LABEL: func.func @train
// CHECK-SAME: %{{.*}}: tensor<f32, #pc.sbp<@m, [B]>> {pc.name = "lr"}
// CHECK-SAME: -> (tensor<f32> {pc.loss}, tensor<f32> {pc.name = "grad_norm"})
// Each gradient in its weight's layout, once, right after it is complete
// (the bias's first: the backward pass makes it first).
// CHECK: %[[DB:.*]] = pc.reshape %{{.*}} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NEXT: pc.to_sbp %[[DB]] : (tensor<3xf32>) -> tensor<3xf32, #pc.sbp<@m, [B]>>
// CHECK-NEXT: %[[DW:.*]] = pc.matmul %arg0, %{{.*}} {transpose_lhs}
// CHECK-NEXT: pc.to_sbp %[[DW]] : (tensor<4x3xf32>) -> tensor<4x3xf32, #pc.sbp<@m, [B]>>
// CHECK: pc.sqrt
// CHECK: pc.set_param @optimizer.step
// CHECK: pc.set_param @w.adam_m
// CHECK: pc.set_param @w.adam_v
// CHECK: pc.set_param @w,
// CHECK: pc.set_param @b,
// SGD: pc.set_param @w.momentum
// SGD: pc.set_param @w,

// Data parallelism falls out: one all-reduce per gradient, nothing else.
// DP-COUNT-2: all-reduce(sum) over axes [0]: [P] -> [B]
// DP-NOT: all-reduce
// DP: boxing total: {{[0-9]+}} boxings, 2 collectives
func.func @train(%x: tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>, %y: tensor<8x3xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<f32> {
  %w = pc.get_param @w : tensor<4x3xf32>
  %b = pc.get_param @b : tensor<3xf32>
  %h = pc.matmul %x, %w : (tensor<8x4xf32, #pc.sbp<@m, [S(0)]>>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = pc.add %h, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %d = pc.sub %z, %y : (tensor<8x3xf32>, tensor<8x3xf32, #pc.sbp<@m, [S(0)]>>) -> tensor<8x3xf32>
  %sq = pc.mul %d, %d : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %l = pc.reduce_mean %sq {axes = array<i64: 0, 1>} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
