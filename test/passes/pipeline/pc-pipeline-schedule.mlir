// Each schedule's action order for a small case: 2 stages, 3 micro-batches
// (m not a multiple of p), on a 4-layer MLP cut into balanced stages.
// RUN: pc-opt %s --pc-pipeline-split="stages=2 micro-batches=3 schedule=gpipe" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch --pc-optimizer=kind=sgd --pc-distribute | FileCheck %s --check-prefix=GPIPE
// RUN: pc-opt %s --pc-pipeline-split="stages=2 micro-batches=3 schedule=1f1b" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch --pc-optimizer=kind=sgd --pc-distribute | FileCheck %s --check-prefix=1F1B
// RUN: pc-opt %s --pc-pipeline-split="stages=2 micro-batches=3 schedule=zb-h1" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch --pc-optimizer=kind=sgd --pc-distribute | FileCheck %s --check-prefix=ZB
// RUN: pc-opt %s --pc-pipeline-split="stages=2 virtual-stages=2 micro-batches=3 schedule=interleaved" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch --pc-optimizer=kind=sgd --pc-distribute | FileCheck %s --check-prefix=INTER
// The predicted bubble and in-flight micro-batches:
// RUN: pc-opt %s --pc-pipeline-split="stages=2 micro-batches=3" --pc-micro-batch=phase=shrink --pc-autodiff --pc-micro-batch --pc-optimizer=kind=sgd --pc-distribute --pc-pipeline-schedule=report=true -o /dev/null | FileCheck %s --check-prefix=REPORT

// GPIPE: func.func @mlp.part0
// GPIPE-SAME: pc.schedule = [#pc.action<F, 0, 0>, #pc.action<F, 0, 1>, #pc.action<F, 0, 2>, #pc.action<B, 0, 0>, #pc.action<B, 0, 1>, #pc.action<B, 0, 2>]
// GPIPE: func.func @mlp.part1
// GPIPE-SAME: pc.schedule = [#pc.action<F, 1, 0>, #pc.action<F, 1, 1>, #pc.action<F, 1, 2>, #pc.action<B, 1, 0>, #pc.action<B, 1, 1>, #pc.action<B, 1, 2>]

// 1F1B: func.func @mlp.part0
// 1F1B-SAME: pc.schedule = [#pc.action<F, 0, 0>, #pc.action<F, 0, 1>, #pc.action<B, 0, 0>, #pc.action<F, 0, 2>, #pc.action<B, 0, 1>, #pc.action<B, 0, 2>]
// A stage's ops carry their actions; a send takes its value's, a receive
// its consumer's.
// 1F1B: pc.send {{.*}}pc.action = #pc.action<F, 0, 0>
// 1F1B: pc.recv {{.*}}pc.action = #pc.action<B, 0, 0>
// 1F1B: func.func @mlp.part1
// 1F1B-SAME: pc.schedule = [#pc.action<F, 1, 0>, #pc.action<B, 1, 0>, #pc.action<F, 1, 1>, #pc.action<B, 1, 1>, #pc.action<F, 1, 2>, #pc.action<B, 1, 2>]

// ZB: func.func @mlp.part0
// ZB-SAME: pc.schedule = [#pc.action<F, 0, 0>, #pc.action<F, 0, 1>, #pc.action<B, 0, 0>, #pc.action<F, 0, 2>, #pc.action<B, 0, 1>, #pc.action<W, 0, 0>, #pc.action<W, 0, 1>, #pc.action<B, 0, 2>, #pc.action<W, 0, 2>]
// Weight gradients are W: the matmul x^T dy of the first layer.
// ZB: pc.matmul {{.*}}pc.action = #pc.action<W, 0, 0>{{.*}}transpose_lhs
// ZB: func.func @mlp.part1
// ZB-SAME: pc.schedule = [#pc.action<F, 1, 0>, #pc.action<B, 1, 0>, #pc.action<F, 1, 1>, #pc.action<B, 1, 1>, #pc.action<W, 1, 0>, #pc.action<F, 1, 2>, #pc.action<B, 1, 2>, #pc.action<W, 1, 1>, #pc.action<W, 1, 2>]

// INTER: func.func @mlp.part0
// INTER-SAME: pc.schedule = [#pc.action<F, 0, 0>, #pc.action<F, 0, 1>, #pc.action<F, 2, 0>, #pc.action<F, 2, 1>, #pc.action<F, 0, 2>, #pc.action<B, 2, 0>, #pc.action<F, 2, 2>, #pc.action<B, 2, 1>, #pc.action<B, 0, 0>, #pc.action<B, 0, 1>, #pc.action<B, 2, 2>, #pc.action<B, 0, 2>]
// INTER: func.func @mlp.part1
// INTER-SAME: pc.schedule = [#pc.action<F, 1, 0>, #pc.action<F, 1, 1>, #pc.action<F, 3, 0>, #pc.action<B, 3, 0>, #pc.action<F, 3, 1>, #pc.action<B, 3, 1>, #pc.action<F, 1, 2>, #pc.action<B, 1, 0>, #pc.action<F, 3, 2>, #pc.action<B, 1, 1>, #pc.action<B, 3, 2>, #pc.action<B, 1, 2>]

// REPORT: pipeline @mlp: 1f1b, 2 stages x 1 virtual, 3 micro-batches
// REPORT-NEXT: stage 0 (ranks [0]): peak 2 micro-batches in flight
// REPORT-NEXT: stage 1 (ranks [1]): peak 1 micro-batches in flight
// REPORT-NEXT: predicted bubble 25.0%

pc.mesh @m <["dp"=1]>
pc.param @w1 : tensor<4x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @w2 : tensor<8x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @w3 : tensor<8x8xf32> = #pc.init<normal(std = 0.1)>
pc.param @w4 : tensor<8x3xf32> = #pc.init<normal(std = 0.1)>
func.func @mlp(%x: tensor<6x4xf32>, %labels: tensor<6xi64>) -> (tensor<f32> {pc.loss}) {
  %w1 = pc.get_param @w1 : tensor<4x8xf32>
  %w2 = pc.get_param @w2 : tensor<8x8xf32>
  %w3 = pc.get_param @w3 : tensor<8x8xf32>
  %w4 = pc.get_param @w4 : tensor<8x3xf32>
  %h1 = pc.matmul %x, %w1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %a1 = pc.tanh %h1 : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %h2 = pc.matmul %a1, %w2 : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %a2 = pc.tanh %h2 : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %h3 = pc.matmul %a2, %w3 : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
  %a3 = pc.tanh %h3 : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %y = pc.matmul %a3, %w4 : (tensor<6x8xf32>, tensor<8x3xf32>) -> tensor<6x3xf32>
  %ce = pc.cross_entropy %y, %labels : (tensor<6x3xf32>, tensor<6xi64>) -> tensor<6xf32>
  %loss = pc.reduce_mean %ce {axes = array<i64: 0>} : (tensor<6xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
